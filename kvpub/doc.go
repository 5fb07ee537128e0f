// Package kvpub carries KV events between workers and routers.
//
// Publishers:
//
//   - [ZMQPublisher] speaks the framing vLLM's and SGLang's
//     ZmqEventPublisher use, so a router written for them (Dynamo,
//     llm-d) can subscribe to a radixkv worker: a PUB socket sending
//     [topic, seq as 8 bytes big-endian, payload] with seq counting from
//     0, and a ROUTER socket that answers [client_id, "", start_seq] with
//     every buffered batch from start_seq and then the end sentinel
//     (seq -1, empty payload). go-zeromq/zmq4, pure Go.
//   - [NATSPublisher] publishes to JetStream, one subject per model and
//     worker (radixkv.kv.<model>.<worker>), with the message id
//     worker:epoch:seq for server-side de-duplication and headers for the
//     sequence, the epoch (the publisher's start) and the payload format.
//     While the server is unreachable batches queue in order and go out,
//     de-duplicated, once it is back ([NATSPublisher.Flush]).
//
// [Pump] drains a host/native Controller's (or Engine's) recorded events
// into either publisher as one batch per call; the controller itself is
// unchanged.
//
// Router side: [ZMQSubscriber] feeds one ZMQ publisher (radixkv's, or a
// vLLM / SGLang worker's) into a router.Router and replays gaps through
// the publisher's replay socket ([ReplayZMQ]); [ConsumeNATS] runs a
// durable JetStream consumer that starts after the router's cursor (so a
// router restored from a snapshot reads only what came later) and
// advances it with every message.
//
// Everything listens on the addresses given; tests and the cluster
// simulation use 127.0.0.1 only.
package kvpub
