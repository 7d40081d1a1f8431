// Package serving runs scaleplane's HTTP servers (the webhook server, the
// metrics server with the debug and activity endpoints, the health probe
// server) so that no client can make one spend without bound:
//
//   - timeouts on the TLS handshake and headers (slowloris), on the whole
//     request, on the handler (its context's deadline), on the response,
//     and on idle kept-alive connections;
//   - a bound on one request's body (413 without reading it) and on the
//     bodies held in memory at once, whatever the number of connections;
//   - a bound on requests handled at once: the excess is answered 429 with
//     Retry-After at once. A body is read in full before its request takes
//     a slot, so clients that send slowly hold no slot and cannot starve
//     the others;
//   - HTTP/2 only when asked for (ALPN offers http/1.1 alone otherwise);
//   - Kubernetes authentication and authorization (TokenReview and
//     SubjectAccessReview) answering 401, 403 or 503 as each case is.
//
// controller-runtime's own servers fix their limits (a 32 s header timeout,
// no body, write or in-flight bound) and answer a failed TokenReview with
// 500; that is why scaleplane runs these instead. Handlers, and what they
// answer, belong to the packages that register them.
package serving
