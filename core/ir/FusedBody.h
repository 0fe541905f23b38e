#pragma once

#include "Error.h"
#include "OpRegistry.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sextant::ir {

/// One operand of a fused body step: a group input, an earlier step's result, or omitted.
struct BodyOperand {
    enum class Kind : uint8_t { Omitted, Input, Step };
    Kind kind = Kind::Omitted;
    uint32_t index = 0; ///< the group input (Input) or the earlier step (Step) it names

    static BodyOperand omitted() { return {}; }
    static BodyOperand input(uint32_t i) { return {Kind::Input, i}; }
    static BodyOperand step(uint32_t i) { return {Kind::Step, i}; }
    bool operator==(const BodyOperand&) const = default;
};

/// One op of a fused body: an op the table marks Fusable::Group, its operands, and its float
/// attributes (sorted by name).
struct BodyStep {
    OpKind op{};
    std::vector<BodyOperand> operands;
    std::vector<std::pair<std::string, double>> attrs;
};

/// The ops a sextant.ElementwiseGroup replays, in order; the last step's result is the group's
/// output. Built once by the fuse-elementwise-chain rule (or the IR parser) and shared, immutable,
/// by the node, its clones and the pipeline's snapshots (Node::body()).
struct FusedBody {
    std::vector<BodyStep> steps;
};

/// Same steps, operands and attributes (attribute values compared bit for bit, so a NaN equals
/// itself). Null equals only null.
bool sameBody(const FusedBody* a, const FusedBody* b);

/// One step as the IR text writes it: `Op(a,b) key=value ...`, operands `iN` (group input N),
/// `tN` (step N's result) or `-` (omitted), values in shortest exact form (%.17g).
std::string bodyStepText(const BodyStep& step);
/// Every step's text, in order: the strings of the printed `body = [...]` attribute.
std::vector<std::string> bodyText(const FusedBody& body);
/// Parses the strings bodyText writes. Checks the syntax, that each op may be a group step and
/// that a `tN` names an earlier step; whether an `iN` names one of the group's inputs is the
/// node's to check (checkBodyInputs). Errors read "body step N 'text': why".
Expected<FusedBody> parseBody(const std::vector<std::string>& lines);
/// Whether every `iN` of `body` names one of `numInputs` group inputs (at least one step).
Status checkBody(const FusedBody& body, size_t numInputs);

/// Whether a step the op table marks Fusable::Pooled (a global pooling, a Conv on one value per
/// channel) reads group input `input`: every part of a split group then reads all of it.
bool pooledInput(const FusedBody& body, uint32_t input);

/// Per step: whether it is a step of the pooled prologue, computed whole in every part (and in
/// every tile) rather than over the part's slice: a Fusable::Pooled step, or a step that reads
/// one and computes fewer elements than the group's output. `stepNumel[i]` is step i's element
/// count, `outNumel` the group output's.
std::vector<char> prologueSteps(const FusedBody& body, const std::vector<int64_t>& stepNumel, int64_t outNumel);

/// The type of each step's result of sextant.ElementwiseGroup `n`, from its inputs' types
/// (ops/FusionOps.cpp); fails as the group's shape inference does.
Expected<std::vector<TensorType>> groupStepTypes(const Node& n);

} // namespace sextant::ir
