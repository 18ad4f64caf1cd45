"""What the CLI puts on the daemon's socket and reads back, without grpcio or the protobuf runtime: HTTP/2
with HPACK for one unary gRPC call (:mod:`.http2`, :mod:`.hpack`) and protobuf's encoding read into the
documents the CLI prints (:mod:`.protodoc`). Their imports cost the CLI next to nothing; see
``benchmarks/bench_cli.py``."""
