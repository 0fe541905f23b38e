// NonMaxSuppression (ONNX opsets 10 and 11; version 11 only reworded the description): greedy
// suppression of overlapping boxes, on the host. Inputs boxes [batches, boxes, 4], scores
// [batches, classes, boxes], and the optional scalars max_output_boxes_per_class (i64, default 0:
// nothing selected), iou_threshold (default 0) and score_threshold (default: none). Attribute
// center_point_box 0: a box is [y1, x1, y2, x2], any two opposite corners; 1: [x_center,
// y_center, width, height]. For each batch and class, the boxes scoring above score_threshold are
// taken in descending score order (ties: lower box index first); a box is selected unless its IOU
// with an already selected one is strictly greater than iou_threshold, until the class has
// max_output_boxes_per_class boxes. Output selected_indices i64 [selected, 3] of (batch, class,
// box) in batch, class, selection order: its length depends on the data, as NonZero's.

#include "OpUtil.h"

#include <algorithm>
#include <numeric>

namespace sextant::ir {

using ops::opError;

namespace {

/// A box as its minimum and maximum corner.
struct Box {
    double y0, x0, y1, x1;
    double area() const { return (y1 - y0) * (x1 - x0); }
};

Box boxAt(const std::vector<double>& b, int64_t k, bool centerPoint) {
    const double* p = b.data() + 4 * k;
    if (centerPoint) {
        const double xc = p[0], yc = p[1], w = p[2], h = p[3];
        return Box{yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
    }
    return Box{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
}

/// IOU of two boxes; 0 when they do not overlap or either has no area.
double iou(const Box& a, const Box& b) {
    const double h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
    const double w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
    if (h <= 0 || w <= 0)
        return 0;
    const double inter = h * w;
    const double uni = a.area() + b.area() - inter;
    if (a.area() <= 0 || b.area() <= 0 || uni <= 0)
        return 0;
    return inter / uni;
}

/// The one value of optional scalar input i, or nothing when it is omitted.
Expected<std::optional<double>> scalarInput(const Node& n, std::span<const Tensor> inputs, size_t i,
                                            const char* what) {
    if (i >= inputs.size() || !n.input(i))
        return std::optional<double>{};
    if (inputs[i].numel() != 1)
        return opError(n, std::string("non-max suppression ") + what + " must hold one value, got " +
                              inputs[i].type().str());
    return std::optional<double>{inputs[i].at(0)};
}

} // namespace

Status verifyNonMaxSuppression(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "center_point_box", 0, 1));
    SX_TRY(ops::requireFloatInput(n, 0, "non-max suppression boxes"));
    SX_TRY(ops::requireFloatInput(n, 1, "non-max suppression scores"));
    SX_TRY(ops::requireFloatInput(n, 3, "non-max suppression iou_threshold"));
    SX_TRY(ops::requireFloatInput(n, 4, "non-max suppression score_threshold"));
    if (const TensorType* m = ops::inputType(n, 2); m && m->dtype != DType::I64)
        return opError(n, "non-max suppression max_output_boxes_per_class must be i64, got " + m->str());
    if (!ops::inputType(n, 0) || !ops::inputType(n, 1))
        return opError(n, "non-max suppression needs its boxes and scores");
    const TensorType& boxes = *ops::inputType(n, 0);
    const TensorType& scores = *ops::inputType(n, 1);
    if (boxes.rank() != 3 || (boxes.shape[2].isKnown() && boxes.shape[2].value != 4))
        return opError(n, "non-max suppression boxes must be [batches, boxes, 4], got " + boxes.str());
    if (scores.rank() != 3)
        return opError(n, "non-max suppression scores must be [batches, classes, boxes], got " + scores.str());
    const auto differ = [](const Dim& a, const Dim& b) { return a.isKnown() && b.isKnown() && a.value != b.value; };
    if (differ(boxes.shape[0], scores.shape[0]) || differ(boxes.shape[1], scores.shape[2]))
        return opError(n, "non-max suppression boxes " + boxes.str() + " and scores " + scores.str() +
                              " disagree in batches or boxes");
    return {};
}

Expected<std::vector<TensorType>> inferNonMaxSuppression(const Node& n) {
    SX_TRY(verifyNonMaxSuppression(n));
    return std::vector<TensorType>{TensorType{DType::I64, {ops::unknownDim(), Dim::known(3)}}};
}

Expected<std::vector<Tensor>> runNonMaxSuppression(const Node& n, std::span<const Tensor> inputs,
                                                   const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& boxesT = inputs[0];
    const Tensor& scoresT = inputs[1];
    if (boxesT.rank() != 3 || boxesT.shape()[2] != 4 || scoresT.rank() != 3 ||
        boxesT.shape()[0] != scoresT.shape()[0] || boxesT.shape()[1] != scoresT.shape()[2])
        return opError(n, "non-max suppression boxes " + boxesT.type().str() + " and scores " +
                              scoresT.type().str() + " must be [batches, boxes, 4] and [batches, classes, boxes]");
    SX_ASSIGN(std::optional<double> maxOut, scalarInput(n, inputs, 2, "max_output_boxes_per_class"));
    SX_ASSIGN(std::optional<double> iouT, scalarInput(n, inputs, 3, "iou_threshold"));
    SX_ASSIGN(std::optional<double> scoreT, scalarInput(n, inputs, 4, "score_threshold"));
    const bool centerPoint = n.attrInt("center_point_box", 0) == 1;
    const int64_t batches = scoresT.shape()[0], classes = scoresT.shape()[1], count = scoresT.shape()[2];
    const int64_t limit = maxOut ? static_cast<int64_t>(std::max(0.0, std::min(*maxOut, 1e15))) : 0;
    const double iouThreshold = iouT.value_or(0.0);
    const std::vector<double> boxes = boxesT.toDoubles();
    const std::vector<double> scores = scoresT.toDoubles();

    std::vector<int64_t> selected; // (batch, class, box) triples
    std::vector<int64_t> order;
    std::vector<Box> kept;
    for (int64_t b = 0; b < batches; ++b)
        for (int64_t c = 0; c < classes; ++c) {
            const double* s = scores.data() + (b * classes + c) * count;
            order.clear();
            for (int64_t k = 0; k < count; ++k)
                if (!scoreT || s[k] > *scoreT)
                    order.push_back(k);
            std::stable_sort(order.begin(), order.end(), [s](int64_t x, int64_t y) { return s[x] > s[y]; });
            kept.clear();
            for (int64_t k : order) {
                if (static_cast<int64_t>(kept.size()) >= limit)
                    break;
                const Box box = boxAt(boxes, b * count + k, centerPoint);
                bool suppressed = false;
                for (const Box& other : kept)
                    if (iou(box, other) > iouThreshold) {
                        suppressed = true;
                        break;
                    }
                if (suppressed)
                    continue;
                kept.push_back(box);
                selected.insert(selected.end(), {b, c, k});
            }
        }
    const auto rows = static_cast<int64_t>(selected.size() / 3);
    return std::vector<Tensor>{Tensor::fromVector<int64_t>({rows, 3}, selected)};
}

} // namespace sextant::ir
