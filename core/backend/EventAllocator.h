#pragma once

#include "Program.h"
#include "core/ir/Error.h"

namespace sextant::backend {

/// Creates one Event per (producer Task, consuming core other than the producer's), waited on by
/// the first Task on that core that depends on the producer, and assigns hardware slots on the
/// recording core. A slot is reused only when every consumer of its previous event
/// happens-before the new producer (through deps and per-core program order), found by a linear
/// scan over the schedule. Needs Program::tasks ordered, with ids, cores and deps set. Fails when
/// a core would need more than the target's event slots at once.
Status allocateEvents(Program& program);

/// Proves the events sound: every wait has a record (and vice versa), each event crosses cores,
/// the graph of deps + per-core order + events is acyclic, every cross-core dep is covered by an
/// event waited on no later than the consumer on its core, and no slot is reused while an earlier
/// event in it may still be waited on.
Status checkEvents(const Program& program);

/// Predecessor lists of the combined order: each Task's deps plus the previous Task on its core.
std::vector<std::vector<int>> combinedPreds(const Program& program);

} // namespace sextant::backend
