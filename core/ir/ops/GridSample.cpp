// GridSample (ONNX opsets 16, 20, 22), a float64/float32 reference kernel on the host. Input X
// [N, C, D1, ..., Dr] is sampled at the locations a grid [N, O1, ..., Or, r] gives in normalised
// coordinates (-1 and 1 are the first and last pixel: their centres with align_corners 1, their
// outer edges with 0); the grid's last dim lists them fastest dim first (x for W, then y for H,
// z for D). Output [N, C, O1, ..., Or].
//   modes: nearest (round half to even), bilinear / linear (2^r neighbours), bicubic / cubic
//   (4^r neighbours, the cubic convolution with A = -0.75). Opset 16 names them nearest,
//   bilinear, bicubic and takes 4-D X only; opset 20 renamed them nearest, linear, cubic and
//   allowed any r (5-D volumetric sampling included); 22 added bfloat16. The importer records the
//   model's opset as "_opset" so the names and ranks of the opset are the ones accepted.
//   padding_mode: zeros (pixels outside read 0), border (an outside location is clamped to the
//   edge pixels, and so is every neighbour index), reflection (an outside location is reflected
//   off the border, [0, D-1] with align_corners 1 and [-0.5, D-0.5] with 0, and so is every
//   neighbour index).

#include "OpUtil.h"

#include "core/ir/Interpreter.h"

#include <algorithm>
#include <cmath>

namespace sextant::ir {

using ops::opError;
using ops::Shape;

namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

struct Params {
    Mode mode = Mode::Linear;
    Padding padding = Padding::Zeros;
    bool alignCorners = false;
};

/// The mode and padding of the node, with the mode names of its opset (both sets when the node
/// does not say its opset).
Expected<Params> readParams(const Node& n) {
    const int64_t opset = n.attrInt("_opset", 0);
    const bool before20 = opset != 0 && opset < 20, since20 = opset >= 20;
    const std::string mode = n.attrString("mode", since20 ? "linear" : "bilinear");
    Params p;
    if (mode == "nearest")
        p.mode = Mode::Nearest;
    else if ((mode == "bilinear" && !since20) || (mode == "linear" && !before20))
        p.mode = Mode::Linear;
    else if ((mode == "bicubic" && !since20) || (mode == "cubic" && !before20))
        p.mode = Mode::Cubic;
    else
        return opError(n, "grid sample mode '" + mode + "' is not one of " +
                              (before20  ? "bilinear, nearest, bicubic (opset " + std::to_string(opset) + ")"
                               : since20 ? "linear, nearest, cubic (opset " + std::to_string(opset) + ")"
                                         : std::string("bilinear/linear, nearest, bicubic/cubic")));
    const std::string padding = n.attrString("padding_mode", "zeros");
    if (padding == "zeros")
        p.padding = Padding::Zeros;
    else if (padding == "border")
        p.padding = Padding::Border;
    else if (padding == "reflection")
        p.padding = Padding::Reflection;
    else
        return opError(n, "grid sample padding_mode '" + padding + "' is not one of zeros, border, reflection");
    p.alignCorners = n.attrInt("align_corners", 0) != 0;
    return p;
}

/// Checks X and grid ranks and their shared dims; returns the output shape.
Expected<Shape> outputShape(const Node& n, const Shape& x, const Shape& grid) {
    const int64_t opset = n.attrInt("_opset", 0);
    if (x.size() < 3)
        return opError(n, "grid sample input must be [N, C, spatial...], got rank " + std::to_string(x.size()));
    if (opset != 0 && opset < 20 && x.size() != 4)
        return opError(n, "grid sample at opset " + std::to_string(opset) + " takes 4-D input only, got rank " +
                              std::to_string(x.size()) + " (N-D sampling came at opset 20)",
                       ErrorKind::Unsupported);
    const size_t r = x.size() - 2;
    if (grid.size() != r + 2)
        return opError(n, "grid sample grid must have rank " + std::to_string(r + 2) + " for input rank " +
                              std::to_string(x.size()) + ", got " + ops::shapeStr(grid));
    const Dim& last = grid[r + 1];
    if (last.isKnown() && last.value != static_cast<int64_t>(r))
        return opError(n, "grid sample grid's last dim must be " + std::to_string(r) + ", got " +
                              ops::shapeStr(grid));
    if (x[0].isKnown() && grid[0].isKnown() && x[0].value != grid[0].value)
        return opError(n, "grid sample input " + ops::shapeStr(x) + " and grid " + ops::shapeStr(grid) +
                              " differ in batch");
    Shape out;
    out.push_back(x[0].isKnown() ? x[0] : grid[0]);
    out.push_back(x[1]);
    for (size_t i = 1; i <= r; ++i)
        out.push_back(grid[i]);
    return out;
}

/// The pixel coordinate of normalised coordinate g along a dim of `size` pixels.
double denormalise(double g, int64_t size, bool alignCorners) {
    return alignCorners ? (g + 1) / 2 * static_cast<double>(size - 1)
                        : ((g + 1) * static_cast<double>(size) - 1) / 2;
}

/// Reflects x into [lo, hi] as often as it takes.
double reflect(double x, double lo, double hi) {
    const double range = hi - lo;
    if (range <= 0)
        return lo;
    if (x < lo) {
        const double dx = lo - x;
        const double k = std::floor(dx / range), rem = dx - k * range;
        return std::fmod(k, 2.0) == 0 ? lo + rem : hi - rem;
    }
    if (x > hi) {
        const double dx = x - hi;
        const double k = std::floor(dx / range), rem = dx - k * range;
        return std::fmod(k, 2.0) == 0 ? hi - rem : lo + rem;
    }
    return x;
}

/// The cubic convolution weights (A = -0.75) of the four pixels around a point t past the first
/// of the middle two (0 <= t < 1).
void cubicWeights(double t, double w[4]) {
    constexpr double a = -0.75;
    auto near = [](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };     // |d| <= 1
    auto far = [](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; }; // 1 < |d| < 2
    w[0] = far(t + 1);
    w[1] = near(t);
    w[2] = near(1 - t);
    w[3] = far(2 - t);
}

template <typename T> class Sampler {
public:
    Sampler(const Params& p, const Tensor& x, const Tensor& grid, Tensor& y)
        : m_p(p), m_r(x.rank() - 2), m_x(x.data<T>()), m_y(y.mutableData<T>()), m_grid(grid.toDoubles()) {
        const auto& xs = x.shape();
        m_batch = xs[0];
        m_channels = xs[1];
        m_in.assign(xs.begin() + 2, xs.end());
        m_inSize = product(m_in);
        m_outSize = product(std::vector<int64_t>(y.shape().begin() + 2, y.shape().end()));
        m_lo.resize(m_r);
        m_hi.resize(m_r);
        for (size_t d = 0; d < m_r; ++d) {
            m_lo[d] = p.alignCorners ? 0.0 : -0.5;
            m_hi[d] = p.alignCorners ? static_cast<double>(m_in[d] - 1) : static_cast<double>(m_in[d]) - 0.5;
        }
    }

    void run() {
        std::vector<double> coord(m_r);
        for (int64_t b = 0; b < m_batch; ++b)
            for (int64_t o = 0; o < m_outSize; ++o) {
                const double* g = m_grid.data() + (b * m_outSize + o) * static_cast<int64_t>(m_r);
                for (size_t d = 0; d < m_r; ++d) {
                    // The grid lists the fastest dim first.
                    double v = denormalise(g[m_r - 1 - d], m_in[d], m_p.alignCorners);
                    if (m_p.mode == Mode::Nearest)
                        v = std::nearbyint(v);
                    if (v < m_lo[d] || v > m_hi[d]) {
                        if (m_p.padding == Padding::Border)
                            v = std::clamp(v, 0.0, static_cast<double>(m_in[d] - 1));
                        else if (m_p.padding == Padding::Reflection)
                            v = reflect(v, m_lo[d], m_hi[d]);
                    }
                    coord[d] = v;
                }
                for (int64_t c = 0; c < m_channels; ++c) {
                    const T* plane = m_x + (b * m_channels + c) * m_inSize;
                    m_y[(b * m_channels + c) * m_outSize + o] = static_cast<T>(sample(plane, coord));
                }
            }
    }

private:
    /// The pixel index along dim d that index i reads, or -1 for a zero (outside, zeros padding).
    int64_t pixelIndex(int64_t i, size_t d) const {
        const int64_t size = m_in[d];
        if (i >= 0 && i < size)
            return i;
        switch (m_p.padding) {
        case Padding::Zeros: return -1;
        case Padding::Border: return std::clamp<int64_t>(i, 0, size - 1);
        case Padding::Reflection:
            return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), m_lo[d], m_hi[d])), 0,
                                       size - 1);
        }
        return -1;
    }

    double sample(const T* plane, const std::vector<double>& coord) const {
        if (m_p.mode == Mode::Nearest) {
            int64_t off = 0;
            for (size_t d = 0; d < m_r; ++d) {
                const int64_t i = pixelIndex(static_cast<int64_t>(coord[d]), d);
                if (i < 0)
                    return 0;
                off = off * m_in[d] + i;
            }
            return static_cast<double>(plane[off]);
        }
        // Per dim: the first neighbour, the neighbours' weights.
        const int taps = m_p.mode == Mode::Linear ? 2 : 4;
        std::vector<int64_t> first(m_r);
        std::vector<double> weights(m_r * 4);
        for (size_t d = 0; d < m_r; ++d) {
            const double f = std::floor(coord[d]), t = coord[d] - f;
            double* w = weights.data() + d * 4;
            if (taps == 2) {
                first[d] = static_cast<int64_t>(f);
                w[0] = 1 - t;
                w[1] = t;
            } else {
                first[d] = static_cast<int64_t>(f) - 1;
                cubicWeights(t, w);
            }
        }
        // Walk the taps^r neighbours.
        double sum = 0;
        std::vector<int> tap(m_r, 0);
        while (true) {
            double w = 1;
            int64_t off = 0;
            bool zero = false;
            for (size_t d = 0; d < m_r; ++d) {
                w *= weights[d * 4 + static_cast<size_t>(tap[d])];
                const int64_t i = pixelIndex(first[d] + tap[d], d);
                if (i < 0)
                    zero = true;
                off = off * m_in[d] + std::max<int64_t>(i, 0);
            }
            if (!zero)
                sum += w * static_cast<double>(plane[off]);
            size_t d = m_r;
            while (d-- > 0) {
                if (++tap[d] < taps)
                    break;
                tap[d] = 0;
            }
            if (d == static_cast<size_t>(-1))
                break;
        }
        return sum;
    }

    Params m_p;
    size_t m_r;
    const T* m_x;
    T* m_y;
    std::vector<double> m_grid;
    int64_t m_batch = 0, m_channels = 0, m_inSize = 0, m_outSize = 0;
    std::vector<int64_t> m_in;
    std::vector<double> m_lo, m_hi;
};

} // namespace

Status verifyGridSample(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "align_corners", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "_opset", 1, 1000));
    SX_TRY(readParams(n));
    SX_TRY(ops::requireFloatInput(n, 0, "grid sample input"));
    SX_TRY(ops::requireFloatInput(n, 1, "grid sample grid"));
    if (!ops::inputType(n, 0) || !ops::inputType(n, 1))
        return opError(n, "grid sample needs its input and grid");
    return {};
}

Expected<std::vector<TensorType>> inferGridSample(const Node& n) {
    SX_TRY(verifyGridSample(n));
    const TensorType& x = *ops::inputType(n, 0);
    SX_ASSIGN(Shape out, outputShape(n, x.shape, ops::inputType(n, 1)->shape));
    return std::vector<TensorType>{TensorType{x.dtype, out}};
}

Expected<std::vector<Tensor>> runGridSample(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(Params p, readParams(n));
    const Tensor& x = inputs[0];
    const Tensor& grid = inputs[1];
    SX_ASSIGN(Shape out, outputShape(n, ops::shapeOf(x), ops::shapeOf(grid)));
    const std::vector<int64_t> dims = ops::extents(out);
    SX_TRY(ops::checkAllocation(n, dims));
    return ops::dispatchFloat(n, x.dtype(), [&](auto t) -> Expected<std::vector<Tensor>> {
        using T = decltype(t);
        Tensor y(x.dtype(), dims);
        if (y.numel() > 0 && x.numel() == 0)
            return opError(n, "grid sample cannot sample an empty input " + x.type().str());
        if (y.numel() > 0)
            Sampler<T>(p, x, grid, y).run();
        return std::vector<Tensor>{std::move(y)};
    });
}

} // namespace sextant::ir

// ---- AffineGrid (opset 20): the sampling grid of affine matrices theta for GridSample.
// theta [N, 2, 3] with size [N, C, H, W] gives grid [N, H, W, 2]; theta [N, 3, 4] with size
// [N, C, D, H, W] gives [N, D, H, W, 3]. Each output point is theta[n] x (x, y[, z], 1), where x
// runs over W, y over H and z over D in normalised coordinates: -1 + 2 i / (S - 1) with
// align_corners 1 (the extreme pixels' centres are -1 and 1), (2 i + 1) / S - 1 with 0 (their outer
// edges are); a dim of one pixel is at 0 either way (as PyTorch's affine_grid, which the op
// follows). The last dim lists x first, as GridSample reads it.

namespace sextant::ir {

namespace {

/// The normalised coordinate of pixel i of `size`.
double gridCoordinate(int64_t i, int64_t size, bool alignCorners) {
    if (size <= 1)
        return 0.0;
    return alignCorners ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(size - 1)
                        : (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(size) - 1.0;
}

/// Checks theta against the spatial rank r (2 or 3, -1 when not yet known) and batch of size.
Status checkTheta(const Node& n, const Shape& theta, int64_t r, const Dim& batch) {
    if (theta.size() != 3)
        return opError(n, "affine grid theta must be [N, 2, 3] or [N, 3, 4], got " + ops::shapeStr(theta));
    const Dim &rows = theta[1], &cols = theta[2];
    if (rows.isKnown() && cols.isKnown() &&
        !((rows.value == 2 && cols.value == 3) || (rows.value == 3 && cols.value == 4)))
        return opError(n, "affine grid theta must be [N, 2, 3] or [N, 3, 4], got " + ops::shapeStr(theta));
    if (r >= 0 && rows.isKnown() && rows.value != r)
        return opError(n, "affine grid theta " + ops::shapeStr(theta) + " is for " + std::to_string(rows.value) +
                              "-D grids, but size gives " + std::to_string(r) + " spatial dims");
    if (batch.isKnown() && theta[0].isKnown() && batch.value != theta[0].value)
        return opError(n, "affine grid theta " + ops::shapeStr(theta) + " and size differ in batch (" +
                              std::to_string(batch.value) + ")");
    return {};
}

Expected<std::vector<int64_t>> affineSize(const Node& n, const Tensor& size) {
    if (size.rank() != 1 || (size.numel() != 4 && size.numel() != 5))
        return opError(n, "affine grid size must be [N, C, H, W] or [N, C, D, H, W], got " + size.type().str());
    std::vector<int64_t> v;
    for (int64_t i = 0; i < size.numel(); ++i) {
        v.push_back(static_cast<int64_t>(size.at(i)));
        if (v.back() < 0)
            return opError(n, "affine grid size must be >= 0, got " + std::to_string(v.back()));
    }
    return v;
}

} // namespace

Status verifyAffineGrid(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "align_corners", 0, 1));
    SX_TRY(ops::requireFloatInput(n, 0, "affine grid theta"));
    const TensorType* size = ops::inputType(n, 1);
    if (!ops::inputType(n, 0) || !size)
        return opError(n, "affine grid needs theta and size");
    if (size->dtype != DType::I64 || size->rank() != 1)
        return opError(n, "affine grid size must be a 1-D i64 tensor, got " + size->str());
    return {};
}

Expected<std::vector<TensorType>> inferAffineGrid(const Node& n) {
    SX_TRY(verifyAffineGrid(n));
    const TensorType& theta = *ops::inputType(n, 0);
    const TensorType& size = *ops::inputType(n, 1);
    int64_t r = size.shape[0].isKnown() ? size.shape[0].value - 2 : -1;
    if (r >= 0 && r != 2 && r != 3)
        return opError(n, "affine grid size must be [N, C, H, W] or [N, C, D, H, W], got " + size.str());
    if (r < 0 && theta.rank() == 3 && theta.shape[1].isKnown())
        r = theta.shape[1].value;
    std::optional<Tensor> known = knownValue(n.input(1));
    std::vector<int64_t> dims;
    if (known) {
        SX_ASSIGN(dims, affineSize(n, *known));
    }
    SX_TRY(checkTheta(n, theta.shape, r, known ? Dim::known(dims[0]) : ops::unknownDim()));
    if (r < 0)
        return opError(n, "affine grid needs size or theta of a known shape (the grid's rank)", ErrorKind::Unsupported);
    Shape out{theta.shape[0]};
    for (int64_t d = 0; d < r; ++d)
        out.push_back(known ? Dim::known(dims[static_cast<size_t>(2 + d)]) : ops::unknownDim());
    out.push_back(Dim::known(r));
    if (known)
        out[0] = Dim::known(dims[0]);
    return std::vector<TensorType>{TensorType{theta.dtype, out}};
}

Expected<std::vector<Tensor>> runAffineGrid(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& theta = inputs[0];
    SX_ASSIGN(std::vector<int64_t> size, affineSize(n, inputs[1]));
    const int64_t r = static_cast<int64_t>(size.size()) - 2;
    SX_TRY(checkTheta(n, ops::shapeOf(theta), r, Dim::known(size[0])));
    const bool align = n.attrInt("align_corners", 0) != 0;
    std::vector<int64_t> dims{size[0]};
    dims.insert(dims.end(), size.begin() + 2, size.end());
    dims.push_back(r);
    SX_TRY(ops::checkAllocation(n, dims));
    Tensor y(theta.dtype(), dims);
    // Spatial extents fastest last: (H, W) or (D, H, W); the point's coordinates x, y[, z].
    const std::vector<int64_t> spatial(size.begin() + 2, size.end());
    const int64_t points = product(spatial), cols = r + 1;
    std::vector<int64_t> idx(static_cast<size_t>(r), 0);
    std::vector<double> coord(static_cast<size_t>(cols), 1.0);
    for (int64_t p = 0; p < points; ++p, ops::nextIndex(idx, spatial)) {
        for (int64_t j = 0; j < r; ++j) { // coordinate j (x, y, z) runs over spatial dim r - 1 - j
            const size_t d = static_cast<size_t>(r - 1 - j);
            coord[static_cast<size_t>(j)] = gridCoordinate(idx[d], spatial[d], align);
        }
        for (int64_t b = 0; b < size[0]; ++b)
            for (int64_t i = 0; i < r; ++i) {
                double v = 0;
                for (int64_t j = 0; j < cols; ++j)
                    v += theta.at((b * r + i) * cols + j) * coord[static_cast<size_t>(j)];
                y.set((b * points + p) * r + i, v);
            }
    }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
