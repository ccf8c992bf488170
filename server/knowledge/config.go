package knowledge

import (
	"flag"
	"fmt"
	"time"
)

// RegisterFlags registers the vector store settings with their defaults,
// filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.EmbeddingModel, "vector-store-embedding-model", "", "catalog embedding model new vector stores embed their files with (empty: the catalog's first embedding model)")
	fs.DurationVar(&c.Lease, "ingestion-lease", 5*time.Minute, "how long a gateway's claim on a file's ingestion lasts; a gateway that dies mid-file leaves it to another after this")
	fs.DurationVar(&c.Poll, "ingestion-poll", time.Second, "how often a gateway looks for files to ingest that another left (new files wake it at once)")
	fs.IntVar(&c.BatchInputs, "ingestion-batch", 64, "chunks embedded per request during ingestion")
	fs.IntVar(&c.MaxFileChunks, "ingestion-max-file-chunks", 20_000, "most chunks one file may be cut into; a longer file fails with the reason")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Lease < 10*time.Second:
		return fmt.Errorf("--ingestion-lease %v: at least 10s", c.Lease)
	case c.Poll <= 0:
		return fmt.Errorf("--ingestion-poll %v: must be positive", c.Poll)
	case c.BatchInputs < 1 || c.BatchInputs > 2048:
		return fmt.Errorf("--ingestion-batch %d: 1 to 2048", c.BatchInputs)
	case c.MaxFileChunks < 1:
		return fmt.Errorf("--ingestion-max-file-chunks %d: at least 1", c.MaxFileChunks)
	}
	return nil
}
