# Sourced by the backup scripts: S3 requests signed with AWS Signature V4 by
# curl itself (no SDK or CLI to install). PARLEY_BACKUP_S3_URL is
# http(s)://host:port/bucket; PARLEY_BACKUP_S3_ACCESS_KEY,
# PARLEY_BACKUP_S3_SECRET_KEY, PARLEY_BACKUP_S3_REGION (default us-east-1).
s3=${PARLEY_BACKUP_S3_URL:?PARLEY_BACKUP_S3_URL is not set (http://host:port/bucket)}

# (The keys go to curl through a config file descriptor, not its command
# line, which other users can read in ps.)
s3curl() {
  curl -sS --fail-with-body --aws-sigv4 "aws:amz:${PARLEY_BACKUP_S3_REGION:-us-east-1}:s3" \
    --config <(printf 'user = "%s:%s"\n' "${PARLEY_BACKUP_S3_ACCESS_KEY:?}" "${PARLEY_BACKUP_S3_SECRET_KEY:?}") \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

# s3_put FILE KEY, s3_get KEY FILE. (One PUT: at most 5 GiB on AWS S3.)
s3_put() { s3curl -o /dev/null -T "$1" "$s3/$2"; }
s3_get() { s3curl -o "$2" "$s3/$1"; }

# s3_list PREFIX: the keys under PREFIX, one a line. (Query parameters sorted
# and the prefix's slashes encoded: curl signs the query as it is written.)
s3_list() {
  s3curl "$s3?list-type=2&prefix=${1//\//%2F}" | grep -o '<Key>[^<]*</Key>' | sed -e 's#<Key>##; s#</Key>##'
}
