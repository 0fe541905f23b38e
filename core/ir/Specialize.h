#pragma once

// Shape specialisation: give a graph with symbolic input dims (ONNX dim_params such as
// 'p2o.DynamicDimension.0' or 'batch') concrete extents, then resolve every symbolic dim inside the
// graph. The backend and the memory planner need static shapes; a model exported with dynamic dims
// only gets them once someone says which shape it will run at.

#include "Error.h"
#include "Graph.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sextant::ir {

/// Concrete dims per graph input name.
using InputShapes = std::map<std::string, std::vector<int64_t>>;

/// Parses "NAME=1x3x48x320" (the CLI's --shape syntax) into the name and its dims. The name is
/// everything before the last '=' (ONNX names may hold ':' or '/'); a scalar is "NAME=" (no dims).
/// Dims are non-negative decimal numbers separated by 'x'.
Expected<std::pair<std::string, std::vector<int64_t>>> parseShapeSpec(std::string_view spec);

/// "1x3x48x320"; "" for a scalar.
std::string formatShapeSpec(const std::vector<int64_t>& dims);

/// Parses several shape specs separated by white space ("x=1x3x640x640 y=2"), as the GUI's
/// input-shapes field takes them; an input named twice is an error. Empty text gives no shapes.
Expected<InputShapes> parseShapeList(std::string_view text);

/// The inverse of parseShapeList: "NAME=DIMS" per input, by name, separated by spaces.
std::string formatShapeList(const InputShapes& shapes);

/// Specialises `graph` in place:
///  1. each input named in `shapes` gets those dims: the name must be a graph input, the rank must
///     match, and a dim the model fixes must not be contradicted; a symbol bound by one input
///     (e.g. 'batch' in input, h and c of an RNN) takes the same extent in every other input;
///  2. node output types are re-inferred in node order; shape arithmetic that becomes computable
///     (Shape/Size of a now-static tensor, and the small integer chains fed by them:
///     Gather, Concat, Cast, Slice, ... up to Reshape's shape operand) is evaluated and replaced by
///     constants carrying the same value names, so that Reshape, Expand, ConstantOfShape and friends
///     get concrete dims;
///  3. every value must end up with known dims; otherwise the error names the dim and the tensor:
///     "cannot resolve dim 'p2o.DynamicDimension.3' of tensor 'softmax_11.tmp_0' (output of node
///     'softmax_11' (Softmax)) after specialising the inputs".
/// On error the graph may be partly specialised: specialise a clone when the original must stay.
/// `folded`, when given, receives the names of the nodes replaced by constants (for provenance).
Status specializeInputs(Graph& graph, const InputShapes& shapes,
                        std::vector<std::string>* folded = nullptr);

/// The graph inputs whose type has a symbolic dim, in input order.
std::vector<const Value*> symbolicInputs(const Graph& graph);

/// For a graph with symbolic input dims: an error naming the first such input, its type and the
/// --shape syntax that specialises it, e.g. "input 'x' has symbolic dims
/// f32[p2o.DynamicDimension.0,3,48,p2o.DynamicDimension.1]: give it a concrete shape with
/// --shape x=Nx3x48xN (N: a number per symbolic dim)". Success when every input is static.
Status requireStaticInputs(const Graph& graph);

} // namespace sextant::ir
