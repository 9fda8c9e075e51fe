// The wire protocol of hybrid inference (docs/protocol.md), in three headers:
// messages.hpp (the versioned binary messages and their checked decoders), service.hpp (the
// server side that owns the sessions and their limits) and transport.hpp (byte-counting
// request-reply channels and the client driver). rpc.hpp carries the same messages over gRPC.
#pragma once

#include "safhire/hybrid/messages.hpp"
#include "safhire/hybrid/service.hpp"
#include "safhire/hybrid/transport.hpp"
