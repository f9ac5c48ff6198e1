/* peer_rows.h - the dense rows of issue 30 ("peers as users run them"),
 * masq's side; bench/peers.py has torch's and numpy's, on the same data.
 *
 * Included by masq_bench.c only. Each set-up draws its inputs with masq's
 * own seed and randn (float32), and lists in [saves] the ones the peers
 * load: `masq_bench --save DIR` writes them to DIR/in_<group>_<name>.npy,
 * then each row's result r (of the row's [check] statement where it has
 * one: the loss and gradients of a step, flattened) to DIR/<row>.npy, which peers.py
 * compares with its own before timing (the "check" column). The bfloat16
 * rows (_bf16) use copies of the float32 inputs rounded to bfloat16 (the h
 * suffix), as torch's .to(torch.bfloat16) rounds them: the same bits. */
#ifndef MASQ_BENCH_PEER_ROWS_H
#define MASQ_BENCH_PEER_ROWS_H

typedef struct {
  const char *group;
  const char *setup;
  const char *saves; /* the float inputs peers.py loads, space-separated */
} peer_setup;

typedef struct {
  const char *name;  /* shared with peers.py and run.sh's table */
  const char *group;
  const char *code;  /* the timed statement; it leaves its result in r */
  const char *check; /* what --save runs instead of code, leaving r one float
                        tensor, or NULL for code */
} peer_row;

/* The padding lengths of the encoder block (masq_bench.c's ATTN_LENS). */
#define ENC_LENS "[239, 130, 175, 95, 173, 154, 228, 222, 202, 183, 181, 244, 153, 145, 124, 101]"

/* examples/train.masq's model (2 -> 16 -> 3, gelu, adam, a fifth of the
 * labels missing) at K times its batch (40) and hidden width (16). */
#define TRAIN_SETUP(K)                                                        \
  "seed(31)\n"                                                                \
  "tx = randn(40 * " #K ", 2)\n"                                              \
  "tlab = float(randint(0, 3, 40 * " #K "))\n"                                \
  "tok = float(rand(40 * " #K ") < 0.8)\n"                                    \
  "ty = masked(long(tlab), tok > 0)\n"                                        \
  "W1 = requires_grad(randn(2, 16 * " #K ") * 0.5)\n"                         \
  "b1 = requires_grad(zeros(16 * " #K "))\n"                                  \
  "W2 = requires_grad(randn(16 * " #K ", 3) * 0.5)\n"                         \
  "b2 = requires_grad(zeros(3))\n"                                            \
  "s1 = none\ns2 = none\ns3 = none\ns4 = none\n"
#define TRAIN_SAVES "tx tlab tok W1 b1 W2 b2"
/* the same in bfloat16: data and parameters (adam keeps its state in the
 * parameters' dtype, as torch's does) */
#define TRAIN_BF16                                                            \
  "tx = to(tx, bfloat16)\n"                                                   \
  "W1 = requires_grad(to(detach(W1), bfloat16))\n"                            \
  "b1 = requires_grad(to(detach(b1), bfloat16))\n"                            \
  "W2 = requires_grad(to(detach(W2), bfloat16))\n"                            \
  "b2 = requires_grad(to(detach(b2), bfloat16))\n"
#define TRAIN_LOSS "cross_entropy(matmul(gelu(matmul(tx, W1) + b1), W2) + b2, ty)"
/* one step of train.masq's loop */
#define TRAIN_STEP                                                            \
  "loss = " TRAIN_LOSS "\n"                                                   \
  "backward(loss)\n"                                                          \
  "W1, s1 = adam_step(W1, W1.grad, s1, lr=0.05)\n"                            \
  "b1, s2 = adam_step(b1, b1.grad, s2, lr=0.05)\n"                            \
  "W2, s3 = adam_step(W2, W2.grad, s3, lr=0.05)\n"                            \
  "b2, s4 = adam_step(b2, b2.grad, s4, lr=0.05)\n"                            \
  "r = loss\n"
/* the loss and the gradients at the set-up's parameters (run on a fresh
 * state, before any step), flattened into one vector */
#define TRAIN_CHECK                                                           \
  "l = " TRAIN_LOSS "\n"                                                      \
  "g = grad(l, [W1, b1, W2, b2])\n"                                           \
  "r = to_tensor(cat([reshape(l, 1), reshape(g[0], -1), g[1], reshape(g[2], -1), g[3]]), 0)\n"

/* A transformer encoder block on a padded batch (B=16, L<=256, D=64, one
 * head, a 256-wide gelu MLP, post-norm), mean-pooled over each sequence's
 * valid positions into 4 classes, cross_entropy, adam on its 14
 * parameters. The mask hides padded queries and keys: masq skips them,
 * torch (peers.py) computes the dense padded tensors with masked_fill. */
#define ENC_PARAMS "eWq, eWk, eWv, eWo, eg1, eh1, eW1, eb1, eW2, eb2, eg2, eh2, eWc, ebc"
#define ENC_SETUP                                                             \
  "seed(30)\n"                                                                \
  "ex = randn(16, 256, 64)\n"                                                 \
  "elen = tensor(" ENC_LENS ")\n"                                             \
  "elab = float(randint(0, 4, 16))\n"                                         \
  "eWq = requires_grad(randn(64, 64) * 0.125)\n"                              \
  "eWk = requires_grad(randn(64, 64) * 0.125)\n"                              \
  "eWv = requires_grad(randn(64, 64) * 0.125)\n"                              \
  "eWo = requires_grad(randn(64, 64) * 0.125)\n"                              \
  "eg1 = requires_grad(1 + randn(64) * 0.1)\n"                                \
  "eh1 = requires_grad(randn(64) * 0.1)\n"                                    \
  "eW1 = requires_grad(randn(64, 256) * 0.125)\n"                             \
  "eb1 = requires_grad(randn(256) * 0.1)\n"                                   \
  "eW2 = requires_grad(randn(256, 64) * 0.0625)\n"                            \
  "eb2 = requires_grad(randn(64) * 0.1)\n"                                    \
  "eg2 = requires_grad(1 + randn(64) * 0.1)\n"                                \
  "eh2 = requires_grad(randn(64) * 0.1)\n"                                    \
  "eWc = requires_grad(randn(64, 4) * 0.125)\n"                               \
  "ebc = requires_grad(randn(4) * 0.1)\n"                                     \
  "emask = (reshape(arange(256), 1, 1, 256) < reshape(elen, 16, 1, 1)) &\n"   \
  "        (reshape(arange(256), 1, 256, 1) < reshape(elen, 16, 1, 1))\n"     \
  "ey = long(elab)\n"                                                         \
  "est = [none, none, none, none, none, none, none, none, none, none, none, none, none, none]\n" \
  "fn enc_loss() {\n"                                                         \
  "  a = softmax(as_masked((ex @ eWq) @ transpose(ex @ eWk, -2, -1) / 8, emask), -1) @ (ex @ eWv)\n" \
  "  h = layer_norm(ex + a @ eWo, [64], eg1, eh1)\n"                          \
  "  f = h + gelu(h @ eW1 + eb1) @ eW2 + eb2\n"                               \
  "  h2 = layer_norm(f, [64], eg2, eh2)\n"                                    \
  "  return cross_entropy(mean(h2, 1) @ eWc + ebc, ey)\n"                     \
  "}\n"
#define ENC_SAVES "ex elab eWq eWk eWv eWo eg1 eh1 eW1 eb1 eW2 eb2 eg2 eh2 eWc ebc"
#define ENC_BF16                                                              \
  "ex = to(ex, bfloat16)\n"                                                   \
  "ps = [" ENC_PARAMS "]\n"                                                   \
  "for i in range(14) { ps[i] = requires_grad(to(detach(ps[i]), bfloat16)) }\n" \
  "eWq, eWk, eWv, eWo, eg1, eh1, eW1, eb1, eW2, eb2, eg2, eh2, eWc, ebc = ps\n"
#define ENC_STEP                                                              \
  "loss = enc_loss()\n"                                                       \
  "gs = grad(loss, [" ENC_PARAMS "])\n"                                       \
  "ps = [" ENC_PARAMS "]\n"                                                   \
  "for i in range(14) {\n"                                                   \
  "  p, st = adam_step(ps[i], gs[i], est[i], lr=0.001)\n"                      \
  "  ps[i] = p\n"                                                              \
  "  est[i] = st\n"                                                            \
  "}\n"                                                                        \
  "eWq, eWk, eWv, eWo, eg1, eh1, eW1, eb1, eW2, eb2, eg2, eh2, eWc, ebc = ps\n" \
  "r = loss\n"
#define ENC_CHECK                                                             \
  "l = enc_loss()\n"                                                          \
  "g = grad(l, [" ENC_PARAMS "])\n"                                           \
  "r = to_tensor(cat([reshape(l, 1), cat([reshape(t, -1) for t in g])]), 0)\n"

static const peer_setup PEER_SETUPS[] = {
    {"pmm", "seed(30)\n"
            "a128 = randn(128, 128)\nb128 = randn(128, 128)\n"
            "a512 = randn(512, 512)\nb512 = randn(512, 512)\n"
            "a1024 = randn(1024, 1024)\nb1024 = randn(1024, 1024)\n"
            "a2048 = randn(2048, 2048)\nb2048 = randn(2048, 2048)\n"
            "a128h = to(a128, bfloat16)\nb128h = to(b128, bfloat16)\n"
            "a512h = to(a512, bfloat16)\nb512h = to(b512, bfloat16)\n"
            "a1024h = to(a1024, bfloat16)\nb1024h = to(b1024, bfloat16)\n"
            "a2048h = to(a2048, bfloat16)\nb2048h = to(b2048, bfloat16)\n",
     "a128 b128 a512 b512 a1024 b1024 a2048 b2048"},
    {"pbmm", "seed(30)\n"
             "ba = randn(64, 128, 128)\nbb = randn(64, 128, 128)\n"
             "bah = to(ba, bfloat16)\nbbh = to(bb, bfloat16)\n",
     "ba bb"},
    /* weights scaled by about 1/sqrt(fan-in), as an initialized layer's */
    {"plin", "seed(30)\n"
             "lx = randn(512, 784)\n"
             "lw1 = randn(784, 1024) * 0.0357\nlb1 = randn(1024) * 0.1\n"
             "lw2 = randn(1024, 1024) * 0.03125\nlb2 = randn(1024) * 0.1\n"
             "lw3 = randn(1024, 10) * 0.03125\nlb3 = randn(10) * 0.1\n"
             "lxh = to(lx, bfloat16)\n"
             "lw1h = to(lw1, bfloat16)\nlb1h = to(lb1, bfloat16)\n"
             "lw2h = to(lw2, bfloat16)\nlb2h = to(lb2, bfloat16)\n"
             "lw3h = to(lw3, bfloat16)\nlb3h = to(lb3, bfloat16)\n",
     "lx lw1 lb1 lw2 lb2 lw3 lb3"},
    {"pln", "seed(30)\n"
            "nx = randn(4096, 1024)\nng = 1 + randn(1024) * 0.1\nnb = randn(1024) * 0.1\n"
            "nw = randn(4096, 1024)\n"
            "nxg = requires_grad(nx)\nngg = requires_grad(ng)\nnbg = requires_grad(nb)\n"
            "nxh = to(nx, bfloat16)\nngh = to(ng, bfloat16)\nnbh = to(nb, bfloat16)\n"
            "nwh = to(nw, bfloat16)\n"
            "nxgh = requires_grad(nxh)\nnggh = requires_grad(ngh)\nnbgh = requires_grad(nbh)\n",
     "nx ng nb nw"},
    {"pge", "seed(30)\n"
            "gx = randn(10000000)\ngw = randn(10000000)\ngxg = requires_grad(gx)\n"
            "gxh = to(gx, bfloat16)\ngwh = to(gw, bfloat16)\ngxgh = requires_grad(gxh)\n",
     "gx gw"},
    {"psm", "seed(30)\n"
            "sx = randn(4096, 1024)\nsxh = to(sx, bfloat16)\n",
     "sx"},
    {"ptr1", TRAIN_SETUP(1), TRAIN_SAVES},
    {"ptr10", TRAIN_SETUP(10), TRAIN_SAVES},
    {"ptr100", TRAIN_SETUP(100), TRAIN_SAVES},
    {"penc", ENC_SETUP, ENC_SAVES},
    /* the steps in bfloat16: the inputs saved are the rounded ones */
    {"ptr1h", TRAIN_SETUP(1) TRAIN_BF16, TRAIN_SAVES},
    {"ptr10h", TRAIN_SETUP(10) TRAIN_BF16, TRAIN_SAVES},
    {"ptr100h", TRAIN_SETUP(100) TRAIN_BF16, TRAIN_SAVES},
    {"pench", ENC_SETUP ENC_BF16, ENC_SAVES},
};

#define LN_BWD(X, G, B, W) "r = grad(sum(layer_norm(" X ", [1024], " G ", " B ") * " W "), [" X ", " G ", " B "])"
#define FLAT3 "\nr = cat([reshape(r[0], -1), r[1], r[2]])\n"

static const peer_row PEER_ROWS[] = {
    {"mm128", "pmm", "r = a128 @ b128", NULL},
    {"mm512", "pmm", "r = a512 @ b512", NULL},
    {"mm1024", "pmm", "r = a1024 @ b1024", NULL},
    {"mm2048", "pmm", "r = a2048 @ b2048", NULL},
    {"mm128_bf16", "pmm", "r = a128h @ b128h", NULL},
    {"mm512_bf16", "pmm", "r = a512h @ b512h", NULL},
    {"mm1024_bf16", "pmm", "r = a1024h @ b1024h", NULL},
    {"mm2048_bf16", "pmm", "r = a2048h @ b2048h", NULL},
    {"bmm", "pbmm", "r = bmm(ba, bb)", NULL},
    {"bmm_bf16", "pbmm", "r = bmm(bah, bbh)", NULL},
    {"lin_gelu", "plin", "r = gelu(lx @ lw1 + lb1)", NULL},
    {"lin_gelu_bf16", "plin", "r = gelu(lxh @ lw1h + lb1h)", NULL},
    {"mlp", "plin", "r = gelu(gelu(lx @ lw1 + lb1) @ lw2 + lb2) @ lw3 + lb3", NULL},
    {"mlp_bf16", "plin", "r = gelu(gelu(lxh @ lw1h + lb1h) @ lw2h + lb2h) @ lw3h + lb3h", NULL},
    {"ln", "pln", "r = layer_norm(nx, [1024], ng, nb)", NULL},
    {"ln_bf16", "pln", "r = layer_norm(nxh, [1024], ngh, nbh)", NULL},
    {"ln_bwd", "pln", LN_BWD("nxg", "ngg", "nbg", "nw"), LN_BWD("nxg", "ngg", "nbg", "nw") FLAT3},
    {"ln_bwd_bf16", "pln", LN_BWD("nxgh", "nggh", "nbgh", "nwh"),
     LN_BWD("nxgh", "nggh", "nbgh", "nwh") FLAT3},
    {"gelu", "pge", "r = gelu(gx)", NULL},
    {"gelu_bf16", "pge", "r = gelu(gxh)", NULL},
    {"gelu_bwd", "pge", "r = grad(sum(gelu(gxg) * gw), gxg)", NULL},
    {"gelu_bwd_bf16", "pge", "r = grad(sum(gelu(gxgh) * gwh), gxgh)", NULL},
    {"softmax", "psm", "r = softmax(sx, 1)", NULL},
    {"softmax_bf16", "psm", "r = softmax(sxh, 1)", NULL},
    {"train1", "ptr1", TRAIN_STEP, TRAIN_CHECK},
    {"train10", "ptr10", TRAIN_STEP, TRAIN_CHECK},
    {"train100", "ptr100", TRAIN_STEP, TRAIN_CHECK},
    {"encoder", "penc", ENC_STEP, ENC_CHECK},
    {"train1_bf16", "ptr1h", TRAIN_STEP, TRAIN_CHECK},
    {"train10_bf16", "ptr10h", TRAIN_STEP, TRAIN_CHECK},
    {"train100_bf16", "ptr100h", TRAIN_STEP, TRAIN_CHECK},
    {"encoder_bf16", "pench", ENC_STEP, ENC_CHECK},
};

#endif
