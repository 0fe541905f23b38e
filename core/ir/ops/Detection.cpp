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
#include <cmath>
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

// ---- RoiAlign (opsets 10, 16, 22): for each region of interest, an output_height x
// output_width grid of bins over the feature map of its batch entry, each bin the average (or
// maximum) of bilinear samples at a regular sampling grid inside it (Mask R-CNN's RoIAlign).
// rois [num_rois, 4] are (x1, y1, x2, y2) in input coordinates, scaled by spatial_scale;
// batch_indices [num_rois] pick the image. coordinate_transformation_mode "half_pixel" (the
// default from version 16) shifts the scaled corners by -0.5; "output_half_pixel" (version 10's
// only behaviour, the importer's "_opset" below 16) does not, and makes each region at least
// 1 x 1. sampling_ratio 0 takes ceil(region / bins) samples per bin along each axis. A sample
// more than one pixel outside the map counts as 0; one within is clamped to the map's edge.
// "max" takes, per bin, the largest of each sample's four weighted corners, as ONNX's reference
// and onnxruntime do (not the largest interpolated value).

namespace sextant::ir {
namespace {

bool roiHalfPixel(const Node& n) {
    const int64_t opset = n.attrInt("_opset", 16);
    return n.attrString("coordinate_transformation_mode", opset >= 16 ? "half_pixel" : "output_half_pixel") ==
           "half_pixel";
}

template <typename T>
void roiAlignImpl(const Node& n, const Tensor& xt, const std::vector<double>& rois, const std::vector<int64_t>& batch,
                  Tensor& yt) {
    const int64_t channels = xt.shape()[1], height = xt.shape()[2], width = xt.shape()[3];
    const int64_t outH = n.attrInt("output_height", 1), outW = n.attrInt("output_width", 1);
    const int64_t ratio = n.attrInt("sampling_ratio", 0);
    const double scale = n.attrFloat("spatial_scale", 1.0);
    const bool halfPixel = roiHalfPixel(n), isMax = n.attrString("mode", "avg") == "max";
    const double offset = halfPixel ? 0.5 : 0.0;
    const T* x = xt.data<T>();
    T* y = yt.mutableData<T>();
    const int64_t numRois = static_cast<int64_t>(batch.size());
    // One sample's four corners (flat offsets within a plane) and their weights; all zero weights
    // for a sample off the map.
    struct Tap {
        int64_t at[4] = {0, 0, 0, 0};
        double w[4] = {0, 0, 0, 0};
    };
    std::vector<Tap> taps;
    for (int64_t r = 0; r < numRois; ++r) {
        const double* box = rois.data() + 4 * r;
        const double x0 = box[0] * scale - offset, y0 = box[1] * scale - offset;
        double roiW = box[2] * scale - offset - x0, roiH = box[3] * scale - offset - y0;
        if (!halfPixel) {
            roiW = std::max(roiW, 1.0);
            roiH = std::max(roiH, 1.0);
        }
        const double binH = roiH / static_cast<double>(outH), binW = roiW / static_cast<double>(outW);
        const int64_t gridH = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(roiH / static_cast<double>(outH)));
        const int64_t gridW = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(roiW / static_cast<double>(outW)));
        const int64_t count = std::max<int64_t>(gridH * gridW, 1);
        for (int64_t ph = 0; ph < outH; ++ph)
            for (int64_t pw = 0; pw < outW; ++pw) {
                taps.clear();
                for (int64_t iy = 0; iy < gridH; ++iy) {
                    double sy = y0 + static_cast<double>(ph) * binH + (static_cast<double>(iy) + 0.5) * binH / static_cast<double>(gridH);
                    for (int64_t ix = 0; ix < gridW; ++ix) {
                        double sx = x0 + static_cast<double>(pw) * binW + (static_cast<double>(ix) + 0.5) * binW / static_cast<double>(gridW);
                        Tap t;
                        if (sy < -1.0 || sy > static_cast<double>(height) || sx < -1.0 || sx > static_cast<double>(width)) {
                            taps.push_back(t);
                            continue;
                        }
                        sy = std::max(sy, 0.0);
                        sx = std::max(sx, 0.0);
                        int64_t yl = static_cast<int64_t>(sy), xl = static_cast<int64_t>(sx), yh = yl + 1, xh = xl + 1;
                        if (yl >= height - 1) {
                            yl = yh = height - 1;
                            sy = static_cast<double>(yl);
                        }
                        if (xl >= width - 1) {
                            xl = xh = width - 1;
                            sx = static_cast<double>(xl);
                        }
                        const double ly = sy - static_cast<double>(yl), lx = sx - static_cast<double>(xl);
                        const double hy = 1.0 - ly, hx = 1.0 - lx;
                        t.at[0] = yl * width + xl;
                        t.at[1] = yl * width + xh;
                        t.at[2] = yh * width + xl;
                        t.at[3] = yh * width + xh;
                        t.w[0] = hy * hx;
                        t.w[1] = hy * lx;
                        t.w[2] = ly * hx;
                        t.w[3] = ly * lx;
                        taps.push_back(t);
                    }
                }
                for (int64_t c = 0; c < channels; ++c) {
                    const T* plane = x + (batch[static_cast<size_t>(r)] * channels + c) * height * width;
                    double acc = 0;
                    bool first = true;
                    for (const Tap& t : taps) {
                        if (isMax) {
                            double v = t.w[0] * static_cast<double>(plane[t.at[0]]);
                            for (int k = 1; k < 4; ++k)
                                v = std::max(v, t.w[k] * static_cast<double>(plane[t.at[k]]));
                            acc = first ? v : std::max(acc, v);
                            first = false;
                        } else {
                            for (int k = 0; k < 4; ++k)
                                acc += t.w[k] * static_cast<double>(plane[t.at[k]]);
                        }
                    }
                    y[((r * channels + c) * outH + ph) * outW + pw] =
                        static_cast<T>(isMax ? acc : acc / static_cast<double>(count));
                }
            }
    }
}

} // namespace

Status verifyRoiAlign(const Node& n) {
    SX_TRY(ops::requireFloatInput(n, 0, "roi align input"));
    SX_TRY(ops::requireFloatInput(n, 1, "rois"));
    if (const TensorType* b = ops::inputType(n, 2); b && b->dtype != DType::I64)
        return opError(n, "batch_indices must be an i64 tensor, got " + std::string(dtypeName(b->dtype)));
    SX_TRY(ops::checkStringAttr(n, "mode", {"avg", "max"}));
    SX_TRY(ops::checkStringAttr(n, "coordinate_transformation_mode", {"half_pixel", "output_half_pixel"}));
    SX_TRY(ops::checkIntAttr(n, "output_height", 1, int64_t{1} << 20));
    SX_TRY(ops::checkIntAttr(n, "output_width", 1, int64_t{1} << 20));
    SX_TRY(ops::checkIntAttr(n, "sampling_ratio", 0, int64_t{1} << 20));
    SX_TRY(ops::checkIntAttr(n, "_opset", 1, 1000));
    return ops::checkFloatAttr(n, "spatial_scale");
}

Expected<std::vector<TensorType>> inferRoiAlign(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* rois = ops::inputType(n, 1);
    const TensorType* batch = ops::inputType(n, 2);
    if (x->rank() != 4)
        return opError(n, "roi align input must be [N, C, H, W], got " + x->str());
    if (rois->rank() != 2 || (rois->shape[1].isKnown() && rois->shape[1].value != 4))
        return opError(n, "rois must be [num_rois, 4], got " + rois->str());
    if (batch->rank() != 1)
        return opError(n, "batch_indices must be [num_rois], got " + batch->str());
    if (rois->shape[0].isKnown() && batch->shape[0].isKnown() && rois->shape[0].value != batch->shape[0].value)
        return opError(n, "rois " + rois->str() + " and batch_indices " + batch->str() + " disagree on num_rois");
    TensorType y;
    y.dtype = x->dtype;
    y.shape = {rois->shape[0], x->shape[1], Dim::known(n.attrInt("output_height", 1)),
               Dim::known(n.attrInt("output_width", 1))};
    return std::vector<TensorType>{y};
}

Expected<std::vector<Tensor>> runRoiAlign(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& roisT = inputs[1];
    const Tensor& batchT = inputs[2];
    if (x.rank() != 4 || roisT.rank() != 2 || roisT.shape()[1] != 4 || batchT.rank() != 1 ||
        batchT.shape()[0] != roisT.shape()[0] || batchT.dtype() != DType::I64)
        return opError(n, "roi align takes X [N, C, H, W], rois [num_rois, 4] and i64 batch_indices [num_rois], got " +
                              x.type().str() + ", " + roisT.type().str() + " and " + batchT.type().str());
    const std::vector<double> rois = roisT.toDoubles();
    std::vector<int64_t> batch(batchT.data<int64_t>(), batchT.data<int64_t>() + batchT.numel());
    for (size_t r = 0; r < batch.size(); ++r)
        if (batch[r] < 0 || batch[r] >= x.shape()[0])
            return opError(n, "batch_indices[" + std::to_string(r) + "] = " + std::to_string(batch[r]) +
                                  " is not an image of the input's " + std::to_string(x.shape()[0]));
    for (double v : rois)
        if (!std::isfinite(v))
            return opError(n, "rois hold a value that is not finite");
    const std::vector<int64_t> out{roisT.shape()[0], x.shape()[1], n.attrInt("output_height", 1),
                                   n.attrInt("output_width", 1)};
    SX_TRY(ops::checkAllocation(n, out));
    // The samples per bin come from the regions' sizes: bound them as the output is bounded.
    const int64_t ratio = n.attrInt("sampling_ratio", 0);
    const double scale = n.attrFloat("spatial_scale", 1.0);
    for (int64_t r = 0; r < roisT.shape()[0]; ++r) {
        const double* b = rois.data() + 4 * r;
        const double h = std::abs(b[3] - b[1]) * std::abs(scale) / static_cast<double>(out[2]) + 1;
        const double w = std::abs(b[2] - b[0]) * std::abs(scale) / static_cast<double>(out[3]) + 1;
        const double samples = ratio > 0 ? static_cast<double>(ratio) * static_cast<double>(ratio) : h * w;
        if (samples * static_cast<double>(out[2] * out[3]) > static_cast<double>(ops::kMaxKernelElements))
            return opError(n, "region " + std::to_string(r) + " would take more than " +
                                  std::to_string(ops::kMaxKernelElements) + " samples");
    }
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), out); // every bin of every region written
        roiAlignImpl<T>(n, x, rois, batch, y);
        return std::vector<Tensor>{y};
    });
}

} // namespace sextant::ir
