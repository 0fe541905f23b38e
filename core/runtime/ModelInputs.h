#pragma once

// What a model is run on: concrete shapes for its symbolic input dims and the input tensors
// themselves, from a directory of ONNX test data (`--inputs DIR`, or the test data that sits next
// to the model as ../shared/models and the samples keep it) or generated deterministically. One
// place, so `sextant-cli run`, `bisect`, `compile` and the GUI pick shapes and inputs the same way.

#include "core/backend/Program.h"
#include "core/ir/Error.h"
#include "core/ir/Graph.h"
#include "core/ir/Specialize.h"
#include "core/ir/Tensor.h"

#include <optional>
#include <string>
#include <vector>

namespace sextant::runtime {

/// The folder of ONNX test data next to `modelPath`, if it has one: `<dir>/<stem>/input_0.pb` as
/// the samples have it, or `<dir>/test_data/<stem>/test_data_set_0/` as the ORT examples and
/// ../shared/models do.
std::optional<std::string> testDataNextTo(const std::string& modelPath);

/// Gives `graph`'s symbolic input dims concrete extents and returns the shapes it applied (empty
/// when it applied none). `requested` (--shape) wins; without it, a graph with symbolic inputs
/// takes the shapes of the tensors in `inputsDir` (input_0.pb, ...; its count must match). After
/// specialising, the tensor sizes are checked again (the importer checked them with the symbolic
/// dims; concrete ones can make tensors far larger). With `requireStatic`, a graph left with
/// symbolic inputs is an error naming the input and how to write --shape for it, followed by
/// "; " and `hint` when one is given (the GUI's own way to give shapes).
Expected<ir::InputShapes> specialiseInputs(ir::Graph& graph, const ir::InputShapes& requested,
                                           const std::string& inputsDir, bool requireStatic,
                                           const std::string& hint = {});

/// Graph inputs whose value decides control flow: integer or bool inputs of at most
/// kMaxBoundElements elements from which an If's condition is computed (silero-vad's sample
/// rate). Each is bound to its value in `inputsDir`: its uses read a constant, so the condition
/// folds and the If is replaced by the branch it takes (rule inline-constant-if), whose nodes
/// then run on the NPU instead of one host step running the whole branch. As TensorRT asks for
/// the values of shape tensors when it builds an engine, the program is compiled for these
/// values: it keeps one guard per bound input (Program::inputGuards) and refuses others.
/// Nothing is bound without `inputsDir`. Returns the guards (empty when nothing was bound).
inline constexpr int64_t kMaxBoundElements = 16;
Expected<std::vector<backend::InputGuard>> bindControlInputs(ir::Graph& graph, const std::string& inputsDir);

/// Where a run's inputs came from.
enum class InputsOrigin {
    Directory,           ///< read from a test-data directory (RunInputs::dir)
    Generated,           ///< generateInputs(graph, 1): no directory was given or found
    GeneratedShapesDiffer, ///< generated because the test data next to the model has other shapes
};

/// The inputs of one run and where they came from.
struct RunInputs {
    std::vector<ir::Tensor> tensors; ///< one per graph input, in order
    InputsOrigin origin = InputsOrigin::Generated;
    std::string dir; ///< the directory read, or the one whose shapes did not fit
};

/// Inputs for `graph`: the tensors in `inputsDir` when given (each file must hold the model's input
/// at its position: the name it gives its tensor, if any, and the dtype must match; Session checks
/// the shapes and converts floats given through the API);
/// else, with `lookNextToModel`, the test data next to `modelPath` when it fits the graph's input
/// shapes one for one; else deterministic generated values (seed 1).
Expected<RunInputs> chooseInputs(const ir::Graph& graph, const std::string& inputsDir, bool lookNextToModel,
                                 const std::string& modelPath);

} // namespace sextant::runtime
