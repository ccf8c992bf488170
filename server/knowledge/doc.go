// Package knowledge makes files searchable: vector stores of a user's files
// (attachments), each file's text cut into chunks by tokens, embedded on the
// catalog's embedding model through the scheduler below interactive
// traffic, and kept in a store.VectorIndex; and the search over them that
// the file_search tool and /v1/vector_stores/{id}/search run.
//
// Ingestion is durable: a file waits in store.VectorStores as in_progress
// until a gateway claims it, and a claim lapses if its gateway dies, so any
// gateway finishes it. Chunk IDs are made from the store, the file and the
// chunk's place, so an ingestion run again writes the same chunks, never
// more.
package knowledge
