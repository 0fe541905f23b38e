// Col2Im and CenterCropPad (ONNX opset 18), reference kernels on the host.
//
// Col2Im(input [N, C * prod(block_shape), L], image_shape [k], block_shape [k]) -> [N, C, image...]
//   the inverse layout of im2col (PyTorch's fold): column l of block element b (both row-major
//   multi-indices) adds into image position l_d * stride_d - pad_begin_d + b_d * dilation_d along
//   each spatial dim d, when that is inside the image. L must be the number of block positions,
//   prod over d of (image_d + pad_begin_d + pad_end_d - dilation_d * (block_d - 1) - 1) / stride_d + 1.
//   Attributes dilations, strides (default 1), pads [begins..., ends...] (default 0).
// CenterCropPad(input, shape [len(axes)]) crops or zero-pads each of `axes` (default all dims, in
//   order; negative ones count from the end) to the length shape gives, centred: a crop drops
//   floor((in - out) / 2) elements at the start, a pad adds floor((out - in) / 2) zeros there (the
//   odd one goes at the end either way, as ONNX's function body does). Any dtype; elements move as
//   bytes.

#include "OpUtil.h"

#include "core/ir/Interpreter.h"

#include <algorithm>
#include <cstring>

namespace sextant::ir {

using ops::opError;
using ops::Shape;

namespace {

/// The integers of a 1-D i32/i64 tensor.
Expected<std::vector<int64_t>> intsOf(const Node& n, const Tensor& t, const char* what) {
    if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
        return opError(n, std::string(what) + " must be i64 or i32, got " + t.type().str());
    if (t.rank() != 1)
        return opError(n, std::string(what) + " must be 1-D, got " + t.type().str());
    std::vector<int64_t> v(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i)
        v[static_cast<size_t>(i)] = static_cast<int64_t>(t.at(i));
    return v;
}

Status requireIntInput(const Node& n, size_t i, const char* what) {
    const TensorType* t = ops::inputType(n, i);
    if (!t)
        return opError(n, std::string(what) + " is required");
    if (t->dtype != DType::I64 && t->dtype != DType::I32)
        return opError(n, std::string(what) + " must be i64 or i32, got " + t->str());
    if (t->rank() != 1)
        return opError(n, std::string(what) + " must be 1-D, got " + t->str());
    return {};
}

// ---- Col2Im

struct Col2ImGeometry {
    std::vector<int64_t> image, block, dilations, strides, padsBegin, padsEnd;
    std::vector<int64_t> blocks; ///< block positions along each spatial dim
};

/// The spatial rank from image_shape's or block_shape's static length; -1 when neither is known.
int64_t col2ImRank(const Node& n) {
    for (size_t i : {size_t{1}, size_t{2}})
        if (const TensorType* t = ops::inputType(n, i); t && t->rank() == 1 && t->shape[0].isKnown())
            return t->shape[0].value;
    return -1;
}

/// Reads and checks the attributes against image_shape and block_shape; `columns` is input's dim 2
/// (checked against the block positions) and `rows` its dim 1 (a multiple of prod(block)); -1 for
/// either when not known.
Expected<Col2ImGeometry> col2ImGeometry(const Node& n, std::vector<int64_t> image, std::vector<int64_t> block,
                                        int64_t rows, int64_t columns) {
    const size_t k = image.size();
    if (k == 0 || block.size() != k)
        return opError(n, "col2im image_shape and block_shape must have one (non-zero) length, got " +
                              std::to_string(k) + " and " + std::to_string(block.size()));
    Col2ImGeometry g;
    g.image = std::move(image);
    g.block = std::move(block);
    g.dilations = n.attrInts("dilations", std::vector<int64_t>(k, 1));
    g.strides = n.attrInts("strides", std::vector<int64_t>(k, 1));
    const std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * k, 0));
    if (g.dilations.size() != k || g.strides.size() != k || pads.size() != 2 * k)
        return opError(n, "col2im dilations and strides need " + std::to_string(k) + " entries and pads " +
                              std::to_string(2 * k) + " for a " + std::to_string(k) + "-D image");
    g.padsBegin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(k));
    g.padsEnd.assign(pads.begin() + static_cast<std::ptrdiff_t>(k), pads.end());
    int64_t blockSize = 1, count = 1;
    for (size_t d = 0; d < k; ++d) {
        if (g.image[d] < 0 || g.block[d] < 1)
            return opError(n, "col2im image_shape must be >= 0 and block_shape >= 1, got " +
                                  std::to_string(g.image[d]) + " and " + std::to_string(g.block[d]));
        const int64_t span = g.dilations[d] * (g.block[d] - 1) + 1;
        const int64_t padded = g.image[d] + g.padsBegin[d] + g.padsEnd[d];
        if (padded < span)
            return opError(n, "col2im block of extent " + std::to_string(span) + " does not fit the padded image's " +
                                  std::to_string(padded) + " along spatial dim " + std::to_string(d));
        g.blocks.push_back((padded - span) / g.strides[d] + 1);
        blockSize *= g.block[d];
        count *= g.blocks.back();
    }
    if (rows >= 0 && rows % blockSize != 0)
        return opError(n, "col2im input's dim 1 (" + std::to_string(rows) + ") is not a multiple of prod(block_shape) " +
                              std::to_string(blockSize));
    if (columns >= 0 && columns != count)
        return opError(n, "col2im input's dim 2 (" + std::to_string(columns) + ") must be the number of blocks, " +
                              std::to_string(count));
    return g;
}

} // namespace

Status verifyCol2Im(const Node& n) {
    SX_TRY(ops::checkIntsAttr(n, "dilations", -1, 1));
    SX_TRY(ops::checkIntsAttr(n, "strides", -1, 1));
    SX_TRY(ops::checkIntsAttr(n, "pads", -1, 0));
    SX_TRY(ops::requireFloatInput(n, 0, "col2im input"));
    SX_TRY(requireIntInput(n, 1, "col2im image_shape"));
    return requireIntInput(n, 2, "col2im block_shape");
}

Expected<std::vector<TensorType>> inferCol2Im(const Node& n) {
    SX_TRY(verifyCol2Im(n));
    const TensorType& x = *ops::inputType(n, 0);
    if (x.rank() != 3)
        return opError(n, "col2im input must be [N, C * prod(block_shape), L], got " + x.str());
    const int64_t k = col2ImRank(n);
    if (k < 0)
        return opError(n, "col2im needs image_shape or block_shape of a known length (the output's rank)",
                       ErrorKind::Unsupported);
    Shape out{x.shape[0], ops::unknownDim()};
    for (int64_t d = 0; d < k; ++d)
        out.push_back(ops::unknownDim());
    std::optional<Tensor> image = knownValue(n.input(1)), block = knownValue(n.input(2));
    if (image && block) {
        SX_ASSIGN(std::vector<int64_t> im, intsOf(n, *image, "col2im image_shape"));
        SX_ASSIGN(std::vector<int64_t> bl, intsOf(n, *block, "col2im block_shape"));
        const int64_t rows = x.shape[1].isKnown() ? x.shape[1].value : -1;
        SX_ASSIGN(Col2ImGeometry g, col2ImGeometry(n, im, bl, rows, x.shape[2].isKnown() ? x.shape[2].value : -1));
        if (rows >= 0)
            out[1] = Dim::known(rows / product(g.block));
        for (int64_t d = 0; d < k; ++d)
            out[static_cast<size_t>(2 + d)] = Dim::known(g.image[static_cast<size_t>(d)]);
    }
    return std::vector<TensorType>{TensorType{x.dtype, out}};
}

Expected<std::vector<Tensor>> runCol2Im(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() != 3)
        return opError(n, "col2im input must be [N, C * prod(block_shape), L], got " + x.type().str());
    SX_ASSIGN(std::vector<int64_t> im, intsOf(n, inputs[1], "col2im image_shape"));
    SX_ASSIGN(std::vector<int64_t> bl, intsOf(n, inputs[2], "col2im block_shape"));
    SX_ASSIGN(Col2ImGeometry g, col2ImGeometry(n, im, bl, x.shape()[1], x.shape()[2]));
    const size_t k = g.image.size();
    const int64_t batch = x.shape()[0], blockSize = product(g.block), columns = x.shape()[2];
    const int64_t channels = x.shape()[1] / blockSize, imageSize = product(g.image);
    std::vector<int64_t> dims{batch, channels};
    dims.insert(dims.end(), g.image.begin(), g.image.end());
    SX_TRY(ops::checkAllocation(n, dims));
    Tensor y(x.dtype(), dims);
    const std::vector<int64_t> imageStrides = ops::stridesOf(g.image);
    std::vector<double> acc(static_cast<size_t>(imageSize));
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t c = 0; c < channels; ++c) {
            std::fill(acc.begin(), acc.end(), 0.0);
            std::vector<int64_t> bi(k, 0);
            for (int64_t e = 0; e < blockSize; ++e, ops::nextIndex(bi, g.block)) {
                const int64_t row = (b * channels * blockSize + c * blockSize + e) * columns;
                std::vector<int64_t> li(k, 0);
                for (int64_t l = 0; l < columns; ++l, ops::nextIndex(li, g.blocks)) {
                    int64_t at = 0;
                    bool inside = true;
                    for (size_t d = 0; d < k && inside; ++d) {
                        const int64_t p = li[d] * g.strides[d] - g.padsBegin[d] + bi[d] * g.dilations[d];
                        inside = p >= 0 && p < g.image[d];
                        at += p * imageStrides[d];
                    }
                    if (inside)
                        acc[static_cast<size_t>(at)] += x.at(row + l);
                }
            }
            const int64_t base = (b * channels + c) * imageSize;
            for (int64_t i = 0; i < imageSize; ++i)
                y.set(base + i, acc[static_cast<size_t>(i)]);
        }
    return std::vector<Tensor>{std::move(y)};
}

// ---- CenterCropPad

namespace {

/// The normalised axes (attribute "axes", default every dim), checked for duplicates.
Expected<std::vector<int64_t>> cropAxes(const Node& n, int64_t rank) {
    std::vector<int64_t> axes;
    if (n.hasAttr("axes")) {
        for (int64_t a : n.attrInts("axes")) {
            SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, a, rank, "center crop pad axis"));
            if (std::find(axes.begin(), axes.end(), axis) != axes.end())
                return opError(n, "center crop pad axes name dim " + std::to_string(axis) + " twice");
            axes.push_back(axis);
        }
    } else {
        for (int64_t a = 0; a < rank; ++a)
            axes.push_back(a);
    }
    return axes;
}

} // namespace

Status verifyCenterCropPad(const Node& n) {
    SX_TRY(ops::checkIntsAttr(n, "axes", -1, std::numeric_limits<int64_t>::min()));
    return requireIntInput(n, 1, "center crop pad shape");
}

Expected<std::vector<TensorType>> inferCenterCropPad(const Node& n) {
    SX_TRY(verifyCenterCropPad(n));
    const TensorType& x = *ops::inputType(n, 0);
    SX_ASSIGN(std::vector<int64_t> axes, cropAxes(n, static_cast<int64_t>(x.rank())));
    const TensorType& s = *ops::inputType(n, 1);
    if (s.shape[0].isKnown() && s.shape[0].value != static_cast<int64_t>(axes.size()))
        return opError(n, "center crop pad shape has " + std::to_string(s.shape[0].value) + " entries for " +
                              std::to_string(axes.size()) + " axes");
    TensorType y = x;
    std::optional<Tensor> shape = knownValue(n.input(1));
    std::vector<int64_t> want;
    if (shape) {
        SX_ASSIGN(want, intsOf(n, *shape, "center crop pad shape"));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
        Dim& d = y.shape[static_cast<size_t>(axes[i])];
        if (!shape) {
            d = ops::unknownDim();
        } else if (want[i] < 0) {
            return opError(n, "center crop pad shape must be >= 0, got " + std::to_string(want[i]));
        } else {
            d = Dim::known(want[i]);
        }
    }
    return std::vector<TensorType>{y};
}

Expected<std::vector<Tensor>> runCenterCropPad(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const int64_t rank = static_cast<int64_t>(x.rank());
    SX_ASSIGN(std::vector<int64_t> axes, cropAxes(n, rank));
    SX_ASSIGN(std::vector<int64_t> want, intsOf(n, inputs[1], "center crop pad shape"));
    if (want.size() != axes.size())
        return opError(n, "center crop pad shape has " + std::to_string(want.size()) + " entries for " +
                              std::to_string(axes.size()) + " axes");
    std::vector<int64_t> out = x.shape();
    std::vector<int64_t> shift(x.rank(), 0); // input index = output index + shift
    for (size_t i = 0; i < axes.size(); ++i) {
        if (want[i] < 0)
            return opError(n, "center crop pad shape must be >= 0, got " + std::to_string(want[i]));
        const size_t a = static_cast<size_t>(axes[i]);
        const int64_t in = x.shape()[a];
        shift[a] = in >= want[i] ? (in - want[i]) / 2 : -((want[i] - in) / 2);
        out[a] = want[i];
    }
    SX_TRY(ops::checkAllocation(n, out));
    Tensor y(x.dtype(), out);
    const size_t es = dtypeSize(x.dtype());
    const std::vector<int64_t> xs = ops::stridesOf(x.shape());
    std::vector<int64_t> idx(out.size(), 0);
    for (int64_t o = 0; o < y.numel(); ++o, ops::nextIndex(idx, out)) {
        int64_t src = 0;
        bool inside = true;
        for (size_t d = 0; d < out.size() && inside; ++d) {
            const int64_t p = idx[d] + shift[d];
            inside = p >= 0 && p < x.shape()[d];
            src += p * xs[d];
        }
        if (inside)
            std::memcpy(y.mutableBytes() + o * static_cast<int64_t>(es), x.bytes() + src * static_cast<int64_t>(es), es);
    }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
