package clickhouse

import "time"

func fromTS(n int64) time.Time { return time.Unix(0, n).UTC() }
