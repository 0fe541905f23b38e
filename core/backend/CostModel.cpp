#include "CostModel.h"

#include "MathUtil.h"

#include <algorithm>

namespace sextant::backend {

namespace {

/// Bytes `v` occupies in memory: in the type it is kept in (storedDType), an NC1HWC0 value with
/// its channel padding (storedBytes).
uint64_t bytesOf(const ir::Value* v, int c0) {
    return v ? storedBytes(storedType(*v), c0) : 0;
}

/// Bytes per element of `v` as it is kept in memory (0 for an absent operand).
uint64_t elemOf(const ir::Value* v) {
    return v ? ir::dtypeSize(storedDType(*v)) : 0;
}

/// Bytes per element of node `n`'s weights (operand `i`) as the cube reads them: a constant the
/// node takes in f16 is priced at f16, as if repacked to f16 when the program is built, though
/// the DRAM image and weights.bin keep the graph's f32 (storedDType keeps weights as they are).
/// Anything else as it is kept in memory.
uint64_t weightElemOf(const ir::Node& n, size_t i) {
    const ir::Value* w = i < n.numInputs() ? n.input(i) : nullptr;
    if (w && w->isConstant() && ir::isFloat(w->type().dtype) && readsInF16(n, i))
        return std::min<uint64_t>(2, ir::dtypeSize(w->type().dtype));
    return elemOf(w);
}

/// A value's stored elements (storedElements; -1 for none), looked up once per work model: the
/// tile search asks for every candidate tile's share of them.
struct Stored {
    int64_t elements = -1;
    Stored(const ir::Value* v, int c0) : elements(v ? storedElements(v->type(), c0) : -1) {}
};

/// Stored elements behind `part` of a value's `whole` logical elements: `part` itself for a plain
/// value, scaled by the channel padding for an NC1HWC0 one.
uint64_t storedElems(const Stored& v, int64_t part, int64_t whole) {
    const int64_t stored = v.elements;
    if (whole <= 0 || stored <= 0 || part <= 0)
        return static_cast<uint64_t>(std::max<int64_t>(part, 0));
    return ceilDiv(static_cast<uint64_t>(stored) * static_cast<uint64_t>(part), static_cast<uint64_t>(whole));
}

int64_t prod(const std::vector<int64_t>& v, size_t from = 0, size_t to = SIZE_MAX) {
    int64_t p = 1;
    for (size_t i = from; i < std::min(to, v.size()); ++i)
        p *= v[i];
    return p;
}

uint64_t vectorLanes(const Target& t, ir::DType dt) {
    return static_cast<uint64_t>(dt == ir::DType::F16 || dt == ir::DType::BF16 ? t.vectorLanesF16 : t.vectorLanesF32);
}

/// Vector lanes for a node's output: f16 lanes when the precision pass marked it f16; int8 lanes
/// for a MaxPool of int8 values (ONNX's own, or one quantized-passthrough moved onto the int8
/// tensor), which only compares and selects: nothing is converted to float. (Q/DQ steps and the
/// int8 cube ops' epilogues compute in f32.)
uint64_t lanesFor(const ir::Node& n, const Target& t) {
    if (n.precision() == ir::Precision::F16)
        return static_cast<uint64_t>(t.vectorLanesF16);
    auto int8 = [](const ir::Value* v) {
        return v && (v->type().dtype == ir::DType::I8 || v->type().dtype == ir::DType::U8);
    };
    if (n.kind() == ir::OpKind::MaxPool && int8(n.input(0)) && int8(n.output(0)))
        return static_cast<uint64_t>(t.vectorLanesInt8);
    return vectorLanes(t, n.output(0)->type().dtype);
}

/// Of an input's `bytes`, what a tile of `tileNumel` of the output's `outNumel` elements needs:
/// its share when the input has the output's element count (`elementwise`), else all of them (a
/// broadcast operand or a parameter vector).
uint64_t elementwiseInput(uint64_t bytes, bool elementwise, int64_t outNumel, int64_t tileNumel) {
    if (!elementwise || outNumel == 0)
        return bytes;
    return ceilDiv(bytes * static_cast<uint64_t>(tileNumel), static_cast<uint64_t>(outNumel));
}

/// A (transposed) convolution's input, weights, optional bias and their dims; fails, naming the
/// node and `what` it is, unless input, weights and output have one rank of at least 3.
/// Also its strides and dilations, one per spatial dim.
struct ConvOperands {
    const ir::Value* x;
    const ir::Value* w;
    const ir::Value* b;
    std::vector<int64_t> xd, wd, od, strides, dil;
};
/// A cube product followed by a vector epilogue (bias, activation, residual) on the same tile:
/// the vector unit takes each output fractal (cubeM x cubeN) as the cube finishes it, so the two
/// units overlap but for one fractal's worth of the shorter of them.
uint64_t productThenEpilogue(uint64_t cube, uint64_t vector, uint64_t fractals) {
    return std::max(cube, vector) + ceilDiv(std::min(cube, vector), std::max<uint64_t>(fractals, 1));
}

Expected<ConvOperands> convOperands(const ir::Node& n, const std::string& what) {
    ConvOperands c{n.input(0), n.input(1), n.input(2), n.input(0)->type().dims(), n.input(1)->type().dims(),
                   n.output(0)->type().dims(), {}, {}};
    if (c.xd.size() < 3 || c.wd.size() != c.xd.size() || c.od.size() != c.xd.size())
        return makeError(ErrorKind::Invalid, "node '" + n.name() + "': " + what + " needs N-d input and weights of equal rank",
                         n.name());
    const size_t sp = c.xd.size() - 2;
    c.strides = n.attrInts("strides", std::vector<int64_t>(sp, 1));
    c.dil = n.attrInts("dilations", std::vector<int64_t>(sp, 1));
    if (c.strides.size() != sp || c.dil.size() != sp)
        return makeError(ErrorKind::Invalid, "node '" + n.name() + "': strides/dilations rank mismatch", n.name());
    return c;
}

Expected<WorkModel> convModel(const ir::Node& n, const Target& t, bool chunkReductions) {
    SX_ASSIGN(ConvOperands c, convOperands(n, "convolution"));
    const ir::Value *x = c.x, *b = c.b;
    const std::vector<int64_t>&xd = c.xd, &wd = c.wd, &od = c.od, &strides = c.strides, &dil = c.dil;
    const size_t sp = xd.size() - 2;
    int64_t groups = std::max<int64_t>(1, n.attrInt("group", 1));
    const int64_t co = od[1], ci = xd[1];
    const int64_t coPerGroup = std::max<int64_t>(1, co / groups);
    const int64_t ciPerGroup = wd[1];
    const int64_t kSpatial = prod(wd, 2);
    // A depthwise convolution (one input channel per output channel) uses one column of the
    // cube per channel; the cube may instead take c0 channels at once against a diagonal block
    // of their weights, one tap per step (c0 x c0 products of which c0 count): whichever is faster.
    const bool depthwise = groups > 1 && coPerGroup == 1 && ciPerGroup == 1;
    // Data moves in the type it is kept in: f16 where every reader takes it in f16 (the cube
    // does), f32 where the precision pass kept the op in f32 or another reader needs f32
    // (storedDType). Weights: weightElemOf.
    const size_t inElem = elemOf(x), wElem = weightElemOf(n, 1);
    const size_t outElem = elemOf(n.output(0));
    WorkModel m;
    m.outDims = od;
    m.splitAxes = {0, 1};
    for (size_t i = 2; i < od.size(); ++i)
        m.splitAxes.push_back(static_cast<int>(i));
    // A dense product's input channels (its reduction) may be split too, in whole C0 blocks: each
    // chunk's input window and weight rows are loaded while the cube works on the chunk before,
    // and summed into the output tile (an accumulator until the last chunk), so even an output
    // that fits whole streams its loads under the product instead of waiting for all of them.
    const bool chunked = chunkReductions && groups == 1 && ci >= 2 * static_cast<int64_t>(t.c0);
    if (chunked)
        m.reduceDims = {ceilDivExtent(ci, t.c0)};
    const size_t rank = od.size();
    uint64_t lanes = vectorLanes(t, ir::DType::F32);
    // An int8 convolution reduces cube_k_int8 deep per cycle; its epilogue (requantisation)
    // runs in f32 lanes.
    const uint64_t cubeK = static_cast<uint64_t>(n.kind() == ir::OpKind::Int8Conv ? t.cubeKInt8 : t.cubeK);
    // An epilogue (bias, fused activation) on the vector unit after the product.
    const bool epilogue = n.info().passes > 0 || b;
    // A post affine (scale and shift after the activation) is one more pass.
    // A FusedConv's residual (input 3) is read tile by tile beside the output and added in the
    // epilogue, one more pass.
    const ir::Value* res = n.kind() == ir::OpKind::FusedConv && n.numInputs() > 3 ? n.input(3) : nullptr;
    const uint64_t resElem = elemOf(res), bElem = elemOf(b);
    const uint64_t epiloguePasses = epilogue ? 1 + (n.attr("post_affine") ? 1 : 0) + (res ? 1 : 0) : 0;
    // An input prologue (x * scale + shift per input channel [, Relu]) runs on the vector unit
    // over each input window as it arrives, the passes of the group it replaced, in f16 lanes
    // where the cube reads the data in f16; the product takes the windows as they are done.
    const bool prologue = ir::hasInputPrologue(n);
    const uint64_t prologuePasses =
        prologue ? static_cast<uint64_t>(ir::opInfo(ir::OpKind::Mul).passes + ir::opInfo(ir::OpKind::Add).passes +
                                         (n.attrString("prologue_activation", "") == "Relu"
                                              ? ir::opInfo(ir::OpKind::Relu).passes
                                              : 0))
                 : 0;
    const uint64_t prologueLanes = vectorLanes(t, readsInF16(n, 0) ? ir::DType::F16 : ir::DType::F32);
    const uint64_t prologueElem = prologue ? weightElemOf(n, 4) + weightElemOf(n, 5) : 0;
    // An NC1HWC0 activation moves with its channel padding: a tile's bytes scale by the
    // tensor's stored / logical ratio (the padding spread over its tiles).
    const int c0 = t.c0;
    const ir::Value* out = n.output(0);
    const int64_t inNumel = x->type().numel(), outNumel = out->type().numel();
    const Stored outStored(out, c0), resStored(res, c0), xStored(x, c0);
    m.tileWork = [=](const std::vector<int64_t>& tile) {
        TileWork w;
        int64_t inSpatial = 1;
        for (size_t d = 0; d < sp; ++d) {
            // The window a tile reads, within the input: the zero padding around it is not read
            // from memory (the cube's image-to-column load supplies it as it fills the window).
            int64_t ext = (tile[2 + d] - 1) * strides[d] + (wd[2 + d] - 1) * dil[d] + 1;
            inSpatial *= std::min(ext, xd[2 + d]);
        }
        int64_t groupsInTile = groups == 1 ? 1 : std::min<int64_t>(groups, ceilDivExtent(tile[1], coPerGroup));
        // The input channels this tile reduces over: a chunk of them, or all the group's.
        const int64_t ciChunk = chunked ? std::min<int64_t>(ci, tile[rank] * c0) : ciPerGroup;
        const uint64_t chunks = static_cast<uint64_t>(chunked ? ceilDivExtent(ci, ciChunk) : 1);
        int64_t ciTile = groups == 1 ? ciChunk : std::min<int64_t>(ci, groupsInTile * ciPerGroup);
        w.inBytes = storedElems(xStored, tile[0] * ciTile * inSpatial, inNumel) * inElem;
        w.weightBytes = static_cast<uint64_t>(tile[1] * ciChunk * kSpatial) * wElem + (b ? tile[1] * bElem : 0) +
                        static_cast<uint64_t>(ciTile) * prologueElem;
        w.weightsSplit = tile[1] < co || ciChunk < ciPerGroup;
        int64_t outSpatial = prod(tile, 2, rank);
        w.outBytes = storedElems(outStored, tile[0] * tile[1] * outSpatial, outNumel) * outElem;
        if (chunks > 1) // the cube's f32 sums, until the last chunk
            w.accBytes = storedElems(outStored, tile[0] * tile[1] * outSpatial, outNumel) * sizeof(float);
        if (res) { // read once per output tile: its share of each chunk
            const uint64_t resBytes =
                ceilDiv(storedElems(resStored, tile[0] * tile[1] * outSpatial, outNumel) * resElem, chunks);
            w.inputs = {{x, w.inBytes}, {res, resBytes}};
            w.inBytes += resBytes;
        }
        uint64_t M = static_cast<uint64_t>(tile[0] * outSpatial);
        uint64_t N = static_cast<uint64_t>(std::min(tile[1], coPerGroup));
        uint64_t K = static_cast<uint64_t>(ciChunk * kSpatial);
        uint64_t cube = static_cast<uint64_t>(groupsInTile) * ceilDiv(M, t.cubeM) * ceilDiv(N, t.cubeN) * ceilDiv(K, cubeK);
        if (depthwise) // or c0 channels at once, one tap per step, through a diagonal weight block
            cube = std::min(cube, ceilDiv(static_cast<uint64_t>(groupsInTile), t.cubeN) * ceilDiv(M, t.cubeM) *
                                      static_cast<uint64_t>(kSpatial));
        const uint64_t fractals = ceilDiv(M, t.cubeM) * ceilDiv(static_cast<uint64_t>(tile[1]), t.cubeN);
        const uint64_t vector = // after the last chunk only: its share of each
            epilogue ? ceilDiv(epiloguePasses * ceilDiv(static_cast<uint64_t>(tile[0] * tile[1] * outSpatial), lanes), chunks)
                     : 0;
        const uint64_t before = // the prologue over this tile's (or chunk's) input window, pipelined
            prologue ? productThenEpilogue(
                           prologuePasses * ceilDiv(static_cast<uint64_t>(tile[0] * ciTile * inSpatial), prologueLanes),
                           cube, fractals)
                     : cube;
        w.computeCycles = productThenEpilogue(before, vector, fractals);
        w.flops = 2 * M * static_cast<uint64_t>(tile[1]) * K;
        return w;
    };
    return m;
}

Expected<WorkModel> gemmModel(const ir::Node& n, const Target& t) {
    std::vector<int64_t> ad = n.input(0)->type().dims(), bd = n.input(1)->type().dims();
    std::vector<int64_t> od = n.output(0)->type().dims();
    if (ad.empty() || bd.empty() || od.empty())
        return makeError(ErrorKind::Invalid, "node '" + n.name() + "': matrix product of scalars", n.name());
    bool isGemm = n.kind() != ir::OpKind::MatMul;
    int64_t K;
    if (isGemm && ad.size() == 2)
        K = n.attrInt("transA", 0) ? ad[0] : ad[1];
    else
        K = ad.back();
    const ir::Value* c = n.numInputs() > 2 ? n.input(2) : nullptr;
    const bool bBatched = bd.size() > 2;
    const size_t outElem = elemOf(n.output(0));
    WorkModel m;
    m.outDims = od;
    for (size_t i = 0; i < od.size(); ++i)
        m.splitAxes.push_back(static_cast<int>(i));
    uint64_t lanes = vectorLanes(t, ir::DType::F32);
    uint64_t cBytes = bytesOf(c, t.c0);
    // An epilogue (bias, fused activation) on the vector unit after the product.
    const bool epilogue = n.info().passes > 0 || c;
    // A and B move in the type they are kept in (see convModel).
    const uint64_t aElem = elemOf(n.input(0)), bElem = weightElemOf(n, 1);
    const uint64_t cubeK = static_cast<uint64_t>(n.kind() == ir::OpKind::Int8Gemm ? t.cubeKInt8 : t.cubeK);
    m.tileWork = [=](const std::vector<int64_t>& tile) {
        TileWork w;
        int64_t Mt = tile.size() >= 2 ? tile[tile.size() - 2] : 1;
        int64_t Nt = tile.back();
        int64_t batch = tile.size() >= 2 ? prod(tile, 0, tile.size() - 2) : 1;
        int64_t Nfull = od.back();
        w.inBytes = static_cast<uint64_t>(batch * Mt * K) * aElem;
        w.weightBytes = static_cast<uint64_t>((bBatched ? batch : 1) * K * Nt) * bElem +
                        (cBytes ? ceilDiv(cBytes * static_cast<uint64_t>(Nt), static_cast<uint64_t>(Nfull)) : 0);
        w.weightsSplit = Nt < Nfull || bBatched;
        w.outBytes = static_cast<uint64_t>(batch * Mt * Nt) * outElem;
        const uint64_t fractals = static_cast<uint64_t>(batch) * ceilDiv(Mt, t.cubeM) * ceilDiv(Nt, t.cubeN);
        w.computeCycles = productThenEpilogue(fractals * ceilDiv(static_cast<uint64_t>(K), cubeK),
                                              epilogue ? ceilDiv(static_cast<uint64_t>(batch * Mt * Nt), lanes) : 0,
                                              fractals);
        w.flops = 2 * static_cast<uint64_t>(batch * Mt * Nt * K);
        return w;
    };
    return m;
}

WorkModel poolModel(const ir::Node& n, const Target& t, bool global) {
    std::vector<int64_t> xd = n.input(0)->type().dims(), od = n.output(0)->type().dims();
    const size_t sp = xd.size() >= 2 ? xd.size() - 2 : 0;
    std::vector<int64_t> kernel = n.attrInts("kernel_shape", std::vector<int64_t>(sp, 1));
    std::vector<int64_t> strides = n.attrInts("strides", std::vector<int64_t>(sp, 1));
    const size_t elem = elemOf(n.input(0));
    uint64_t lanes = lanesFor(n, t);
    uint64_t extraOutBytes = 0;
    for (size_t i = 1; i < n.numOutputs(); ++i)
        extraOutBytes += bytesOf(n.output(i), t.c0);
    const int c0 = t.c0;
    const ir::Value* x = n.input(0);
    const ir::Value* out = n.output(0);
    WorkModel m;
    m.outDims = od;
    m.splitAxes = {0, 1};
    if (!global)
        for (size_t i = 2; i < od.size(); ++i)
            m.splitAxes.push_back(static_cast<int>(i));
    else // the spatial dims it reduces, in chunks (a 240x240 map per channel does not fit whole)
        m.reduceDims.assign(xd.begin() + 2, xd.end());
    const size_t rank = od.size();
    int64_t outNumel = prod(od);
    const Stored outStored(out, c0), xStored(x, c0);
    const int64_t inNumel = x->type().numel();
    const size_t outElem = elemOf(out);
    m.tileWork = [=](const std::vector<int64_t>& tile) {
        TileWork w;
        int64_t inSpatial = 1;
        uint64_t steps = 1;
        for (size_t d = 0; d < sp; ++d) {
            if (global) {
                inSpatial *= tile[rank + d];
                continue;
            }
            int64_t k = d < kernel.size() ? kernel[d] : 1, s = d < strides.size() ? strides[d] : 1;
            inSpatial *= std::min((tile[2 + d] - 1) * s + k, xd[2 + d]);
            steps *= static_cast<uint64_t>(k);
        }
        // An NC1HWC0 input moves with its channel padding (the tensor's stored / logical ratio).
        w.inBytes = storedElems(xStored, tile[0] * tile[1] * inSpatial, inNumel) * elem;
        int64_t tileNumel = prod(tile, 0, rank);
        w.outBytes = storedElems(outStored, tileNumel, outNumel) * outElem +
                     (outNumel ? ceilDiv(extraOutBytes * tileNumel, outNumel) : 0);
        if (global)
            w.computeCycles = ceilDiv(static_cast<uint64_t>(tile[0] * tile[1] * inSpatial), lanes) +
                              ceilDiv(static_cast<uint64_t>(tileNumel), lanes);
        else // every output reads its window: the lanes take outputs and window taps alike
            w.computeCycles = ceilDiv(static_cast<uint64_t>(tileNumel) * steps, lanes);
        w.flops = global ? static_cast<uint64_t>(tile[0] * tile[1] * inSpatial) : static_cast<uint64_t>(tileNumel) * steps;
        return w;
    };
    return m;
}

/// Transposed convolution X [N, Ci, in...] * W [Ci, Co/group, k...] -> Y [N, Co, out...] on the
/// cube. An output tile reads the input window that scatters into it: about tile / stride input
/// positions per spatial dim, plus the kernel's reach. Each output position gathers about
/// k / stride taps per dim, which sets the product's K.
Expected<WorkModel> convTransposeModel(const ir::Node& n, const Target& t) {
    SX_ASSIGN(ConvOperands c, convOperands(n, "transposed convolution"));
    const ir::Value *x = c.x, *b = c.b;
    const std::vector<int64_t>&xd = c.xd, &wd = c.wd, &od = c.od, &strides = c.strides, &dil = c.dil;
    const size_t sp = xd.size() - 2;
    const int64_t groups = std::max<int64_t>(1, n.attrInt("group", 1));
    const int64_t ci = xd[1], co = od[1];
    const int64_t ciPerGroup = std::max<int64_t>(1, ci / groups);
    const int64_t coPerGroup = std::max<int64_t>(1, wd[1]);
    int64_t taps = 1; // kernel taps that land on one output position
    for (size_t d = 0; d < sp; ++d)
        taps *= std::max<int64_t>(1, ceilDivExtent(wd[2 + d], strides[d]));
    const size_t inElem = elemOf(x), wElem = weightElemOf(n, 1), bElem = elemOf(b); // see convModel
    const size_t outElem = elemOf(n.output(0));
    const uint64_t lanes = vectorLanes(t, ir::DType::F32);
    const int c0 = t.c0;
    const ir::Value* out = n.output(0);
    const int64_t inNumel = x->type().numel(), outNumel = out->type().numel();
    const bool epilogue = n.info().passes > 0 || b;
    WorkModel m;
    m.outDims = od;
    m.splitAxes = {0, 1};
    for (size_t i = 2; i < od.size(); ++i)
        m.splitAxes.push_back(static_cast<int>(i));
    const Stored outStored(out, c0), xStored(x, c0);
    m.tileWork = [=](const std::vector<int64_t>& tile) {
        TileWork tw;
        int64_t inSpatial = 1;
        for (size_t d = 0; d < sp; ++d) {
            const int64_t s = std::max<int64_t>(1, strides[d]);
            const int64_t reach = ((wd[2 + d] - 1) * dil[d]) / s + 1;
            inSpatial *= std::min(xd[2 + d], ceilDivExtent(tile[2 + d], s) + reach);
        }
        const int64_t groupsInTile =
            groups == 1 ? 1 : std::min<int64_t>(groups, ceilDivExtent(tile[1], coPerGroup));
        const int64_t ciTile = groups == 1 ? ci : std::min<int64_t>(ci, groupsInTile * ciPerGroup);
        tw.inBytes = storedElems(xStored, tile[0] * ciTile * inSpatial, inNumel) * inElem;
        tw.weightBytes = static_cast<uint64_t>(ciTile * std::min(tile[1], coPerGroup) * prod(wd, 2)) * wElem +
                         (b ? static_cast<uint64_t>(tile[1]) * bElem : 0);
        tw.weightsSplit = tile[1] < co;
        const int64_t outSpatial = prod(tile, 2);
        tw.outBytes = storedElems(outStored, tile[0] * tile[1] * outSpatial, outNumel) * outElem;
        const uint64_t M = static_cast<uint64_t>(tile[0] * outSpatial);
        const uint64_t N = static_cast<uint64_t>(std::min(tile[1], coPerGroup));
        const uint64_t K = static_cast<uint64_t>(ciPerGroup * taps);
        // Bias and/or a fused activation: one vector pass over the product, beside it.
        tw.computeCycles = productThenEpilogue(
            static_cast<uint64_t>(groupsInTile) * ceilDiv(M, t.cubeM) * ceilDiv(N, t.cubeN) * ceilDiv(K, t.cubeK),
            epilogue ? ceilDiv(static_cast<uint64_t>(tile[0] * tile[1] * outSpatial), lanes) : 0,
            ceilDiv(M, t.cubeM) * ceilDiv(static_cast<uint64_t>(tile[1]), t.cubeN));
        tw.flops = 2 * M * static_cast<uint64_t>(tile[1]) * K;
        return tw;
    };
    return m;
}

/// Resize on the vector unit: an output tile reads the input region it samples, scaled by
/// in / out per dim with a tap or two of margin (nearest 1, n-linear 2, cubic 4 per dim), not
/// the whole input. Each output element costs one step per tap it blends.
WorkModel resizeModel(const ir::Node& n, const Target& t) {
    const ir::Value* x = n.input(0);
    const ir::Value* out = n.output(0);
    std::vector<int64_t> xd = x->type().dims(), od = out->type().dims();
    const std::string mode = n.attrString("mode", "nearest");
    const int64_t tapsPerDim = mode == "cubic" ? 4 : mode == "linear" ? 2 : 1;
    uint64_t steps = 1;
    for (size_t d = 0; d < std::min(xd.size(), od.size()); ++d)
        if (xd[d] != od[d])
            steps *= static_cast<uint64_t>(tapsPerDim);
    // Constant roi / scales / sizes operands: loaded whole.
    uint64_t paramBytes = 0;
    for (size_t i = 1; i < n.numInputs(); ++i)
        paramBytes += bytesOf(n.input(i), t.c0);
    const uint64_t lanes = lanesFor(n, t);
    const size_t elem = elemOf(x);
    const size_t outElem = elemOf(out);
    const int c0 = t.c0;
    const int64_t inNumel = x->type().numel(), outNumel = out->type().numel();
    WorkModel m;
    m.outDims = od;
    for (size_t i = 0; i < od.size(); ++i)
        m.splitAxes.push_back(static_cast<int>(i));
    const Stored outStored(out, c0), xStored(x, c0);
    m.tileWork = [=](const std::vector<int64_t>& tile) {
        TileWork w;
        int64_t inTile = 1;
        for (size_t d = 0; d < tile.size(); ++d) {
            if (d >= xd.size() || od[d] <= 0) {
                inTile *= tile[d];
                continue;
            }
            const int64_t margin = xd[d] == od[d] ? 0 : tapsPerDim;
            inTile *= std::min(xd[d], ceilDivExtent(tile[d] * xd[d], od[d]) + margin);
        }
        const int64_t tileNumel = prod(tile);
        w.inBytes = storedElems(xStored, inTile, inNumel) * elem;
        w.weightBytes = paramBytes;
        const uint64_t storedTile = storedElems(outStored, tileNumel, outNumel);
        w.outBytes = storedTile * outElem;
        w.computeCycles = ceilDiv(storedTile, lanes) * steps;
        w.flops = static_cast<uint64_t>(tileNumel) * steps;
        return w;
    };
    return m;
}

/// Elementwise-like ops (and data movement): every output dim splits except `reduceFrom` onwards.
/// `steps` passes at the node's lanes (OpInfo::passes: 1 for add, multiply, max and the like;
/// more for what the vector unit computes by a sequence, such as division by Newton-Raphson
/// reciprocal and a multiply, or exp/log/sqrt/tanh/erf by polynomial steps; this is what an
/// accuracy-trading rule that replaces a division by a multiply saves), plus `statSteps` passes
/// at `statLanes` (LayerNormalization's mean and variance, which stash_type may keep in another
/// precision than the output). `concat`: each input supplies its share of the tile.
/// `whole`, per input: read whole by every tile (a group's pooled prologue reads it), with
/// `wholeCycles` and `wholeFlops` of work every tile does once.
struct WholeWork {
    std::vector<char> inputs;
    uint64_t cycles = 0, flops = 0;
};
WorkModel elementwiseModel(const ir::Node& n, const Target& t, uint64_t steps, size_t reduceFrom, bool dmaOnly,
                           bool concat = false, uint64_t statSteps = 0, uint64_t statLanes = 1,
                           WholeWork whole = {}) {
    std::vector<int64_t> od = n.output(0)->type().dims();
    WorkModel m;
    m.outDims = od;
    for (size_t i = 0; i < std::min(reduceFrom, od.size()); ++i)
        m.splitAxes.push_back(static_cast<int>(i));
    int64_t outNumel = prod(od);
    uint64_t lanes = lanesFor(n, t);
    std::vector<const ir::Value*> ins(n.inputs().begin(), n.inputs().end());
    uint64_t outElem = elemOf(n.output(0));
    uint64_t extraOutBytes = 0;
    for (size_t i = 1; i < n.numOutputs(); ++i)
        extraOutBytes += bytesOf(n.output(i), t.c0);
    const int c0 = t.c0;
    const ir::Value* out = n.output(0);
    const Stored outStored(out, c0);
    // Each input's bytes in memory, and whether it has the output's elements, looked up once.
    std::vector<uint64_t> inBytes(ins.size(), 0);
    std::vector<char> elementwise(ins.size(), 0);
    for (size_t i = 0; i < ins.size(); ++i) {
        inBytes[i] = bytesOf(ins[i], c0);
        elementwise[i] = ins[i] && ins[i]->type().numel() == outNumel;
    }
    m.tileWork = [=](const std::vector<int64_t>& tile) {
        TileWork w;
        int64_t tileNumel = prod(tile);
        for (size_t i = 0; i < ins.size(); ++i) {
            const ir::Value* v = ins[i];
            if (!v)
                continue;
            uint64_t bytes = 0;
            if (i < whole.inputs.size() && whole.inputs[i] && !v->isConstant())
                bytes = inBytes[i];
            else if (concat) // each input contributes its share of the tile
                bytes = outNumel ? ceilDiv(inBytes[i] * tileNumel, outNumel) : 0;
            else if (dmaOnly && v->isConstant() && v->type().dtype == ir::DType::I64)
                w.weightBytes += inBytes[i]; // shape operands
            else if (dmaOnly)
                bytes = outNumel ? ceilDiv(inBytes[i] * tileNumel, outNumel) : 0;
            else if (v->isConstant())
                w.weightBytes += inBytes[i];
            else
                bytes = elementwiseInput(inBytes[i], elementwise[i], outNumel, tileNumel);
            if (bytes == 0)
                continue;
            w.inBytes += bytes;
            auto same = std::find_if(w.inputs.begin(), w.inputs.end(), [&](const auto& in) { return in.first == v; });
            if (same != w.inputs.end())
                same->second += bytes;
            else
                w.inputs.emplace_back(v, bytes);
        }
        // A blocked output is written (and computed) in whole C0 blocks, padding included.
        const uint64_t storedTile = storedElems(outStored, tileNumel, outNumel);
        w.outBytes = storedTile * outElem + (outNumel ? ceilDiv(extraOutBytes * tileNumel, outNumel) : 0);
        w.computeCycles = dmaOnly ? 0 : ceilDiv(storedTile, lanes) * steps + ceilDiv(storedTile, statLanes) * statSteps;
        w.flops = dmaOnly ? 0 : static_cast<uint64_t>(tileNumel) * (steps + statSteps);
        w.computeCycles += whole.cycles;
        w.flops += whole.flops;
        return w;
    };
    return m;
}

/// An ElementwiseGroup replays its body's ops over each tile: the sum of their passes. A pooled
/// prologue (rule fold-squeeze-excite: a global pooling, then convolutions and activations on one
/// value per channel) is computed whole in every tile, from its inputs read whole: the pooling's
/// input elements, each Conv's MACs and each other step's elements, at the group's lanes.
Expected<WorkModel> groupModel(const ir::Node& n, const Target& t) {
    const ir::FusedBody* body = n.body();
    if (!body)
        return elementwiseModel(n, t, 1, SIZE_MAX, false);
    const bool pooled = std::any_of(body->steps.begin(), body->steps.end(), [](const ir::BodyStep& s) {
        return ir::opInfo(s.op).fusable == ir::Fusable::Pooled;
    });
    if (!pooled) { // every step over the tile: no body to build (a 20,000-node graph has thousands of groups)
        uint64_t steps = 0;
        for (const ir::BodyStep& step : body->steps)
            steps += static_cast<uint64_t>(ir::opInfo(step.op).passes);
        return elementwiseModel(n, t, std::max<uint64_t>(steps, 1), SIZE_MAX, false);
    }
    SX_ASSIGN(std::vector<ir::TensorType> types, ir::groupStepTypes(n));
    std::vector<int64_t> numel;
    for (const ir::TensorType& type : types)
        numel.push_back(std::max<int64_t>(type.numel(), 0));
    const std::vector<char> prologue = ir::prologueSteps(*body, numel, n.output(0)->type().numel());
    auto operandNumel = [&](const ir::BodyOperand& o) -> int64_t {
        if (o.kind == ir::BodyOperand::Kind::Input && o.index < n.numInputs() && n.input(o.index))
            return std::max<int64_t>(n.input(o.index)->type().numel(), 0);
        if (o.kind == ir::BodyOperand::Kind::Step && o.index < numel.size())
            return numel[o.index];
        return 0;
    };
    const uint64_t lanes = lanesFor(n, t);
    uint64_t steps = 0;
    WholeWork whole;
    for (size_t i = 0; i < body->steps.size() && i < prologue.size(); ++i) {
        const ir::BodyStep& step = body->steps[i];
        const uint64_t passes = static_cast<uint64_t>(ir::opInfo(step.op).passes);
        if (!prologue[i]) {
            steps += passes;
            continue;
        }
        uint64_t work = static_cast<uint64_t>(numel[i]) * std::max<uint64_t>(passes, 1);
        if (step.op == ir::OpKind::GlobalAveragePool || step.op == ir::OpKind::GlobalMaxPool)
            work = static_cast<uint64_t>(step.operands.empty() ? 0 : operandNumel(step.operands[0]));
        else if (step.op == ir::OpKind::Conv && step.operands.size() > 1) {
            const std::vector<int64_t> od = types[i].dims();
            const int64_t weights = operandNumel(step.operands[1]);
            const int64_t perOut = od.size() > 1 && od[1] > 0 ? weights / od[1] : 0; // Cin / group x taps
            work = static_cast<uint64_t>(numel[i] * perOut); // one MAC per lane and cycle
        }
        whole.cycles += ceilDiv(work, lanes);
        whole.flops += work;
    }
    for (uint32_t j = 0; j < n.numInputs(); ++j)
        whole.inputs.push_back(ir::pooledInput(*body, j) ? 1 : 0);
    return elementwiseModel(n, t, std::max<uint64_t>(steps, 1), SIZE_MAX, false, false, 0, 1, std::move(whole));
}

/// sextant.Attention on one core: per batch and block of query rows, Q x K^T and P x V on the cube
/// unit and the softmax between them (scale, then five passes, three without max-subtraction)
/// on the vector unit in f32. K and V are read whole for every block of rows.
Expected<WorkModel> attentionModel(const ir::Node& n, const Target& t) {
    const std::vector<int64_t> qd = n.input(0)->type().dims(), kd = n.input(1)->type().dims(),
                               vd = n.input(2)->type().dims(), od = n.output(0)->type().dims();
    const size_t r = od.size();
    if (r < 2 || qd.size() != r || kd.size() != r || vd.size() != r)
        return makeError(ErrorKind::Invalid, "node '" + n.name() + "': attention needs Q, K, V and output of one rank >= 2",
                         n.name());
    const int64_t D = qd[r - 1];
    const int64_t Sk = n.attrInt("transB", 0) ? kd[r - 2] : kd[r - 1];
    const int64_t Dv = vd[r - 1];
    const ir::Value *q = n.input(0), *k = n.input(1), *v = n.input(2);
    const uint64_t passes = 1 + (n.attrInt("fast_softmax", 0) ? 3 : 5);
    const uint64_t qElem = elemOf(q), kElem = elemOf(k), vElem = elemOf(v); // as kept in memory
    const uint64_t outElem = elemOf(n.output(0));
    const uint64_t lanes = vectorLanes(t, ir::DType::F32);
    WorkModel m;
    m.outDims = od;
    for (size_t i = 0; i + 1 < r; ++i) // batch dims and query rows; Dv stays whole
        m.splitAxes.push_back(static_cast<int>(i));
    m.tileWork = [=](const std::vector<int64_t>& tile) {
        TileWork w;
        const int64_t batch = prod(tile, 0, r - 2), St = tile[r - 2];
        w.inputs = {{q, static_cast<uint64_t>(batch * St * D) * qElem},
                    {k, static_cast<uint64_t>(batch * Sk * D) * kElem},
                    {v, static_cast<uint64_t>(batch * Sk * Dv) * vElem}};
        w.inBytes = w.inputs[0].second + w.inputs[1].second + w.inputs[2].second;
        w.outBytes = static_cast<uint64_t>(batch * St * Dv) * outElem;
        const uint64_t cube = ceilDiv(St, t.cubeM) * ceilDiv(Sk, t.cubeN) * ceilDiv(D, t.cubeK) +
                              ceilDiv(St, t.cubeM) * ceilDiv(Dv, t.cubeN) * ceilDiv(Sk, t.cubeK);
        const uint64_t scores = static_cast<uint64_t>(batch * St * Sk);
        w.computeCycles = static_cast<uint64_t>(batch) * cube + ceilDiv(scores, lanes) * passes;
        w.flops = 2 * static_cast<uint64_t>(batch * St * Sk * (D + Dv)) + scores * passes;
        return w;
    };
    return m;
}

/// The first dim a Softmax or LayerNormalization reduces: its "axis" attribute (default -1,
/// counted from the end when negative), clamped to the output's rank.
size_t reducedFrom(const ir::Node& n) {
    const int64_t rank = static_cast<int64_t>(n.output(0)->type().rank());
    int64_t axis = n.attrInt("axis", -1);
    if (axis < 0)
        axis += rank;
    return static_cast<size_t>(std::clamp<int64_t>(axis, 0, rank));
}

} // namespace

Expected<WorkModel> workModel(const Group& g, const Target& t, bool chunkReductions) {
    const ir::Node& n = *g.nodes.front();
    const ir::OpInfo& op = n.info();
    const uint64_t passes = static_cast<uint64_t>(op.passes);
    switch (op.work) {
    case ir::WorkModel::Host:
        return makeError(ErrorKind::Unsupported,
                         "op '" + ir::qualifiedOpName(n.kind()) + "' at node '" + n.name() +
                             "' has no NPU cost model",
                         n.name());
    case ir::WorkModel::Conv: return convModel(n, t, chunkReductions);
    case ir::WorkModel::ConvTranspose: return convTransposeModel(n, t);
    case ir::WorkModel::Resize: return resizeModel(n, t);
    case ir::WorkModel::Gemm: return gemmModel(n, t);
    case ir::WorkModel::Pool:
    case ir::WorkModel::GlobalPool:
        if (n.output(0)->type().rank() < 3 || n.input(0)->type().rank() != n.output(0)->type().rank())
            return makeError(ErrorKind::Invalid, "node '" + n.name() + "': pooling needs N, C and spatial dims", n.name());
        return poolModel(n, t, op.work == ir::WorkModel::GlobalPool);
    case ir::WorkModel::Softmax:
        // Softmax: max, subtract, exp, sum, divide; every dim from the axis on is reduced
        // (covers both the opset < 13 flattening and the opset 13 single-axis semantics).
        return elementwiseModel(n, t, passes, reducedFrom(n), false);
    case ir::WorkModel::LayerNorm: {
        // Mean, subtract, square, mean: four passes at the statistics' precision (f32 unless
        // stash_type 10 keeps them in f16, rule layernorm-f16-variance); normalise, scale and
        // shift: the op's passes at the output's.
        const uint64_t statLanes = n.attrInt("stash_type", 1) == 10 ? static_cast<uint64_t>(t.vectorLanesF16)
                                                                    : vectorLanes(t, ir::DType::F32);
        return elementwiseModel(n, t, passes, reducedFrom(n), false, false, 4, statLanes);
    }
    case ir::WorkModel::Attention: return attentionModel(n, t);
    case ir::WorkModel::Elementwise: return elementwiseModel(n, t, passes, SIZE_MAX, false);
    case ir::WorkModel::Group: return groupModel(n, t);
    case ir::WorkModel::Copy: // the DMA engine gathers a transposed tile with strided reads
        return elementwiseModel(n, t, 0, SIZE_MAX, true);
    case ir::WorkModel::Concat: return elementwiseModel(n, t, 0, SIZE_MAX, true, true);
    }
    return makeError(ErrorKind::Invalid, "node '" + n.name() + "': unknown work model", n.name());
}

} // namespace sextant::backend
