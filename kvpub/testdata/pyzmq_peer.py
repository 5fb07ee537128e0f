"""A libzmq (pyzmq) peer for kvpub's interop test.

publisher PUB_PORT REPLAY_PORT N: bind a PUB and a ROUTER socket on
127.0.0.1 the way vLLM's and SGLang's publishers do, send N batches as
[topic "kv", seq 8-byte big-endian, payload] (vLLM's array shape, packed
with msgpack), then answer replay requests until no request came for 3 s.

subscriber PUB_ENDPOINT REPLAY_ENDPOINT N: subscribe, collect N live
messages, ask the replay socket for everything from seq 0, and print one
JSON line: the live and replayed sequence numbers and the first batch.
"""
import json
import struct
import sys
import time

import msgpack
import zmq

END = struct.pack(">q", -1)


def batch(i):
    stored = ["BlockStored", [i * 10 + 1, i * 10 + 2], None, list(range(8)), 4, None, "GPU", None]
    return msgpack.packb([float(i), [stored], 0], use_bin_type=True)


def publisher(pub_port, replay_port, n):
    ctx = zmq.Context.instance()
    pub = ctx.socket(zmq.PUB)
    pub.bind(f"tcp://127.0.0.1:{pub_port}")
    rep = ctx.socket(zmq.ROUTER)
    rep.bind(f"tcp://127.0.0.1:{replay_port}")
    print("ready", flush=True)
    buf = []
    for seq in range(n):
        payload = batch(seq)
        pub.send_multipart([b"kv", seq.to_bytes(8, "big"), payload])
        buf.append((seq, payload))
        time.sleep(0.01)
    last = time.time()
    while time.time() - last < 3:
        if rep.poll(100):
            client, _, start = rep.recv_multipart()
            start = int.from_bytes(start, "big")
            for seq, payload in buf:
                if seq >= start:
                    rep.send_multipart([client, b"", seq.to_bytes(8, "big"), payload])
            rep.send_multipart([client, b"", END, b""])
            last = time.time()


def subscriber(pub_ep, replay_ep, n):
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(pub_ep)
    print("ready", flush=True)
    live = []
    first = None
    while len(live) < n:
        if not sub.poll(10000):
            break
        topic, seq, payload = sub.recv_multipart()
        live.append(int.from_bytes(seq, "big"))
        if first is None:
            first = msgpack.unpackb(payload, raw=False)
    dealer = ctx.socket(zmq.DEALER)
    dealer.connect(replay_ep)
    dealer.send_multipart([b"", (0).to_bytes(8, "big")])
    replayed = []
    while dealer.poll(10000):
        _, seq, payload = dealer.recv_multipart()
        if seq == END:
            break
        replayed.append(int.from_bytes(seq, "big"))
    print(json.dumps({"live": live, "replayed": replayed, "first": first}), flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "publisher":
        publisher(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        subscriber(sys.argv[2], sys.argv[3], int(sys.argv[4]))
