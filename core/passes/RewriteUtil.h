#pragma once

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <optional>
#include <string>
#include <vector>

namespace sextant::passes {

/// The only user of `v`, or nullptr when it has none, several, or is a graph output (a graph
/// output has an implicit extra user: the caller of the model).
ir::Node* singleUser(const ir::Value* v);

/// Number of uses of `v`, counting "is a graph output" as one.
size_t useCount(const ir::Value* v);

/// The constant data of `v`, or nullptr when `v` is null or not a constant.
const ir::Tensor* constantOf(const ir::Value* v);

/// True when every element of `t` equals `value` exactly.
bool allEqual(const ir::Tensor& t, double value);

/// "[1,8,28,28]" for diagnostics.
std::string shapeStr(const std::vector<int64_t>& dims);

/// Sorted, unique union of the provenance origins of `nodes`.
std::vector<std::string> unionOrigins(const std::vector<const ir::Node*>& nodes);

/// Why `node`'s output `from` cannot be replaced by `to` (empty when it can). Replacing is
/// always possible unless `from` is a graph output and `to` could not take its name.
std::string cannotForward(const ir::Value* from, const ir::Value* to);

/// Replaces every use of `node`'s output `from` by `to` and erases `node`. When `from` is a graph
/// output, `to` takes its name, so the model's output names never change.
Status forwardAndErase(ir::Graph& graph, ir::Node* node, ir::Value* from, ir::Value* to);

/// Replaces `chain` (nodes in graph order; each one's output feeds the next, the last one's
/// output 0 is the chain's result) by one new node of `kind` that keeps the first node's name,
/// produces a value with the name and type of the chain's result, sits where the chain's last
/// node sat, and carries the union of the chain's origins with `createdBy`. The caller has
/// checked that no value inside the chain is used outside it.
Expected<ir::Node*> replaceChain(ir::Graph& graph, const std::vector<ir::Node*>& chain,
                                 ir::OpKind kind, std::vector<ir::Value*> inputs,
                                 ir::AttributeMap attrs, const std::string& createdBy);

/// Adds a constant named after `base` (made unique).
Expected<ir::Value*> addDerivedConstant(ir::Graph& graph, const std::string& base, ir::Tensor t);

} // namespace sextant::passes
