#pragma once
// The engine's model computations for checks: runs target forwards (libtorch), so it is linked
// only into the engine, whose `check` passes it to every check in Artifacts::engine.

#include "checks/check.h"

namespace draftgate::checks {

const Engine& model_engine();

}  // namespace draftgate::checks
