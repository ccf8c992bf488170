// Package gateway is the HTTP side of `parley serve`: the middleware every
// request passes (request id, body limit, CORS), the health endpoints, and a
// server that speaks HTTP/1.1 and h2c on one port and shuts down gracefully.
// Services are mounted on it by main; it knows none of them.
package gateway
