"""The scheduler extender's answers, free of HTTP and gRPC: the protocol's messages (:mod:`.protocol`, Go's
JSON in :mod:`.gojson`), every node's mirror (:mod:`.mirrors`), the ledger of in-flight placements
(:mod:`.ledger`) and the verbs on them (:mod:`.engine`). ``kubeletemu extender`` (:mod:`kubeletemu.extender`)
serves them over HTTPS; the fleet's ``extender`` setup runs them on its simulated clock."""
