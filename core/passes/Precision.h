#pragma once

#include "Pass.h"

#include <memory>

namespace sextant::passes {

/// What the `precision` pass sets (Node::precision, printed as `precision = "..."`):
///   F16AccF32 "f16-acc-f32"  cube ops: f16 inputs and weights, f32 accumulation
///   F16       "f16"          vector ops the policy allows in f16
///   F32       "f32"          accuracy-critical ops (Softmax, normalisation and reductions,
///                            Exp/Log/Pow/Sqrt/Reciprocal/Erf, and fused groups that contain one
///                            of them), and every op the target's policy keeps in f32
/// `precision`: marks every compute node (cube and vector cost class) with the precision the
/// NPU runs it in, per the target's policy (PipelineConfig::cubeInputs / vectorPrecision, from
/// the target's "cube_inputs" / "vector_precision"; npu-a: f16 both, the marks above). Annotation only: the reference executor keeps
/// computing in f64/f32. Rules: assign-precision (one application per node marked),
/// keep-f32-critical (one per node kept in f32 for accuracy), keep-f32-quantized (one per node at
/// the edge of a quantized region: it reads a DequantizeLinear or feeds a QuantizeLinear).
std::unique_ptr<Pass> makePrecisionPass();

inline constexpr const char* kAssignPrecisionRule = "assign-precision";
inline constexpr const char* kKeepF32Rule = "keep-f32-critical";
inline constexpr const char* kKeepF32QuantizedRule = "keep-f32-quantized";

} // namespace sextant::passes
