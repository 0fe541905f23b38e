// MatMul, Gemm and FusedGemm: matrix products through OpenBLAS.

#include "OpUtil.h"

namespace sextant::ir {
namespace ops {

namespace {

/// Equality of a contraction dim where both are known; symbolic dims are accepted.
Status checkContraction(const Node& n, const Dim& ka, const Dim& kb, const Shape& a, const Shape& b) {
    if (ka.isKnown() && kb.isKnown() && ka.value != kb.value)
        return opError(n, "inner dimensions do not match: " + shapeStr(a) + " x " + shapeStr(b) +
                              " (" + std::to_string(ka.value) + " vs " + std::to_string(kb.value) +
                              ")");
    return {};
}

struct MatMulShapes {
    Shape out;
    Shape batch; ///< broadcast batch dims
    bool vecA = false, vecB = false;
};

Expected<MatMulShapes> matmulShapes(const Node& n, const Shape& a0, const Shape& b0) {
    if (a0.empty() || b0.empty())
        return opError(n, "matmul operands must have rank >= 1, got " + shapeStr(a0) + " and " +
                              shapeStr(b0));
    MatMulShapes s;
    Shape a = a0, b = b0;
    if (a.size() == 1) {
        s.vecA = true;
        a.insert(a.begin(), Dim::known(1));
    }
    if (b.size() == 1) {
        s.vecB = true;
        b.push_back(Dim::known(1));
    }
    SX_TRY(checkContraction(n, a[a.size() - 1], b[b.size() - 2], a0, b0));
    Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
    SX_ASSIGN(s.batch, broadcastShapes(n, batchA, batchB));
    s.out = s.batch;
    if (!s.vecA)
        s.out.push_back(a[a.size() - 2]);
    if (!s.vecB)
        s.out.push_back(b[b.size() - 1]);
    return s;
}

template <typename T> Tensor matmulImpl(const Tensor& at, const Tensor& bt, const MatMulShapes& s) {
    std::vector<int64_t> as = at.shape(), bs = bt.shape();
    if (s.vecA)
        as.insert(as.begin(), 1);
    if (s.vecB)
        bs.push_back(1);
    const int64_t m = as[as.size() - 2], k = as[as.size() - 1], nn = bs[bs.size() - 1];
    const std::vector<int64_t> batch = extents(s.batch);
    // Uninitialised: GEMM with beta = 0 writes each batch's [m, nn] block, and the blocks tile it.
    Tensor yt = Tensor::uninitialized(dtypeOf<T>(), extents(s.out));
    const T* a = at.data<T>();
    const T* b = bt.data<T>();
    T* y = yt.mutableData<T>();
    const int64_t batches = product(batch);
    const std::vector<int64_t> batchA(as.begin(), as.end() - 2), batchB(bs.begin(), bs.end() - 2);
    if (batchB.empty() || product(batchB) == 1) {
        // One weight matrix: all rows of A in one product when A's batch is not broadcast.
        if (product(batchA) == batches) {
            gemm(false, false, batches * m, nn, k, T(1), a, k, b, nn, T(0), y, nn);
            return yt;
        }
    }
    const std::vector<int64_t> sa = broadcastStrides(batchA, batch), sb = broadcastStrides(batchB, batch);
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t bi = 0; bi < batches; ++bi) {
        int64_t rem = bi, offA = 0, offB = 0;
        for (size_t d = batch.size(); d-- > 0;) {
            int64_t i = rem % batch[d];
            rem /= batch[d];
            offA += i * sa[d];
            offB += i * sb[d];
        }
        gemm(false, false, m, nn, k, T(1), a + offA * m * k, k, b + offB * k * nn, nn, T(0),
             y + bi * m * nn, nn);
    }
    return yt;
}

} // namespace

Expected<Shape> matmulOutputShape(const Node& n, const Shape& a, const Shape& b) {
    SX_ASSIGN(MatMulShapes s, matmulShapes(n, a, b));
    return s.out;
}

Expected<Tensor> matmulOf(const Node& n, const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype())
        return opError(n, "matmul inputs have mixed dtypes");
    SX_ASSIGN(MatMulShapes s, matmulShapes(n, shapeOf(a), shapeOf(b)));
    SX_TRY(checkAllocation(n, extents(s.out)));
    SX_ASSIGN(std::vector<Tensor> y, dispatchFloat(n, a.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        return std::vector<Tensor>{matmulImpl<decltype(tag)>(a, b, s)};
    }));
    return std::move(y[0]);
}

Status verifyGemmAttrs(const Node& n) {
    SX_TRY(checkIntAttr(n, "transA", 0, 1));
    SX_TRY(checkIntAttr(n, "transB", 0, 1));
    SX_TRY(checkFloatAttr(n, "alpha"));
    SX_TRY(checkFloatAttr(n, "beta"));
    for (size_t i = 0; i < 3; ++i)
        SX_TRY(requireFloatInput(n, i, i == 0 ? "gemm A" : i == 1 ? "gemm B" : "gemm C"));
    return {};
}

Expected<Shape> gemmOutputShape(const Node& n, const Shape& a, const Shape& b, const Shape* c) {
    const bool transA = n.attrInt("transA", 0) != 0, transB = n.attrInt("transB", 0) != 0;
    const bool wideA = n.kind() == OpKind::FusedGemm && !transA;
    if (a.size() != 2 && !(wideA && a.size() > 2))
        return opError(n, "gemm A must be 2-D, got " + shapeStr(a));
    if (b.size() != 2)
        return opError(n, "gemm B must be 2-D, got " + shapeStr(b));
    Shape out;
    Dim ka;
    if (transA) {
        out.push_back(a[1]);
        ka = a[0];
    } else {
        out.assign(a.begin(), a.end() - 1);
        ka = a.back();
    }
    Dim kb = transB ? b[1] : b[0];
    SX_TRY(checkContraction(n, ka, kb, a, b));
    out.push_back(transB ? b[0] : b[1]);
    if (c) {
        SX_ASSIGN(Shape bc, broadcastShapes(n, out, *c));
        if (bc.size() != out.size())
            return opError(n, "gemm C " + shapeStr(*c) + " cannot broadcast to the output " +
                                  shapeStr(out));
        for (size_t i = 0; i < out.size(); ++i)
            if (out[i].isKnown() && bc[i].isKnown() && out[i].value != bc[i].value)
                return opError(n, "gemm C " + shapeStr(*c) + " cannot broadcast to the output " +
                                      shapeStr(out));
    }
    return out;
}

Expected<std::vector<TensorType>> inferGemmLike(const Node& n) {
    const TensorType* a = inputType(n, 0);
    const TensorType* b = inputType(n, 1);
    const TensorType* c = inputType(n, 2);
    if (!a || !b)
        return opError(n, "gemm needs inputs A and B");
    if (a->dtype != b->dtype || (c && c->dtype != a->dtype))
        return opError(n, "gemm inputs have mixed dtypes");
    SX_ASSIGN(Shape out, gemmOutputShape(n, a->shape, b->shape, c ? &c->shape : nullptr));
    TensorType t;
    t.dtype = a->dtype;
    t.shape = std::move(out);
    return std::vector<TensorType>{t};
}

Expected<Tensor> gemmForward(const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(checkKernelInputs(n, inputs));
    const Tensor& at = inputs[0];
    const Tensor& bt = inputs[1];
    const Tensor* ct = n.input(2) && inputs.size() > 2 ? &inputs[2] : nullptr;
    if (bt.dtype() != at.dtype() || (ct && ct->dtype() != at.dtype()))
        return opError(n, "gemm inputs have mixed dtypes");
    Shape cs = ct ? shapeOf(*ct) : Shape{};
    SX_ASSIGN(Shape outShape, gemmOutputShape(n, shapeOf(at), shapeOf(bt), ct ? &cs : nullptr));
    const bool transA = n.attrInt("transA", 0) != 0, transB = n.attrInt("transB", 0) != 0;
    const double alpha = n.attrFloat("alpha", 1.0), beta = n.attrFloat("beta", 1.0);
    SX_TRY(checkAllocation(n, extents(outShape)));
    auto run = [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        const std::vector<int64_t> out = extents(outShape);
        // Uninitialised: either C is broadcast into every element first, or GEMM runs with
        // beta = 0, which writes every element.
        Tensor yt = Tensor::uninitialized(dtypeOf<T>(), out);
        T* y = yt.mutableData<T>();
        const int64_t nn = out.back();
        const int64_t m = nn == 0 ? 0 : yt.numel() / nn;
        const int64_t k = transA ? at.shape()[0] : at.shape().back();
        bool useC = ct && beta != 0.0;
        if (useC) {
            broadcastCopy(ct->data<T>(), ct->shape(), out, y);
            if (beta != 1.0)
                for (int64_t i = 0; i < yt.numel(); ++i)
                    y[i] *= static_cast<T>(beta);
        }
        gemm(transA, transB, m, nn, k, static_cast<T>(alpha), at.data<T>(), transA ? m : k,
             bt.data<T>(), transB ? k : nn, useC ? T(1) : T(0), y, nn);
        return std::vector<Tensor>{yt};
    };
    SX_ASSIGN(std::vector<Tensor> ys, dispatchFloat(n, at.dtype(), run));
    return std::move(ys[0]);
}

} // namespace ops

// ---- MatMul

Status verifyMatMul(const Node& n) {
    SX_TRY(ops::requireFloatInput(n, 0, "matmul A"));
    return ops::requireFloatInput(n, 1, "matmul B");
}

Expected<std::vector<TensorType>> inferMatMul(const Node& n) {
    const TensorType* a = ops::inputType(n, 0);
    const TensorType* b = ops::inputType(n, 1);
    if (a->dtype != b->dtype)
        return ops::opError(n, "matmul inputs have mixed dtypes");
    SX_ASSIGN(auto s, ops::matmulShapes(n, a->shape, b->shape));
    TensorType t;
    t.dtype = a->dtype;
    t.shape = std::move(s.out);
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runMatMul(const Node& n, std::span<const Tensor> inputs,
                                        const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    if (a.dtype() != b.dtype())
        return ops::opError(n, "matmul inputs have mixed dtypes");
    SX_ASSIGN(auto s, ops::matmulShapes(n, ops::shapeOf(a), ops::shapeOf(b)));
    SX_TRY(ops::checkAllocation(n, ops::extents(s.out)));
    return ops::dispatchFloat(n, a.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        return std::vector<Tensor>{ops::matmulImpl<decltype(tag)>(a, b, s)};
    });
}

// ---- Gemm

Status verifyGemm(const Node& n) { return ops::verifyGemmAttrs(n); }

Expected<std::vector<TensorType>> inferGemm(const Node& n) { return ops::inferGemmLike(n); }

Expected<std::vector<Tensor>> runGemm(const Node& n, std::span<const Tensor> inputs,
                                      const KernelContext&) {
    SX_ASSIGN(Tensor y, ops::gemmForward(n, inputs));
    return std::vector<Tensor>{std::move(y)};
}

// ---- FusedGemm: Gemm + activation

Status verifyFusedGemm(const Node& n) {
    SX_TRY(ops::verifyGemmAttrs(n));
    SX_TRY(ops::readActivation(n));
    return {};
}

Expected<std::vector<TensorType>> inferFusedGemm(const Node& n) { return ops::inferGemmLike(n); }

Expected<std::vector<Tensor>> runFusedGemm(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    SX_ASSIGN(Tensor y, ops::gemmForward(n, inputs));
    return ops::withActivation(n, std::move(y));
}

} // namespace sextant::ir
