/* opcodes.h - the instruction set, one X-macro list that drives the opcode
 * enum, the dispatch table of vm.c and the disassembler of chunk.c.
 *
 *   OP(name, operands, stack effect, description)
 *
 * [operands] spells the bytes after the opcode, one letter per operand, so
 * that every instruction's length is known from this list alone (see
 * mq_chunk_op_length). Operands are unsigned, little-endian:
 *   1 byte:  L local slot, U capture, N item count, B binary operator,
 *            A argument count
 *   2 bytes: K constant, G global slot, n item count, D forward jump,
 *            d backward jump
 *   after the fixed operands: i the INDEX item kinds, one byte per item
 *   (their count is the operand before); c the CLOSURE captures, two bytes
 *   each (their count is the nupvals of the function in constant K). The stack effect is what the
 * disassembler prints; -N means "pops N more than it pushes". Grep "ORDER OP"
 * before reordering: nothing else depends on the order. */
#ifndef MQ_OPCODES_H
#define MQ_OPCODES_H

#define MQ_OPCODES(OP)                                                              \
  OP(CONST, "K", +1, "push constant K")                                             \
  OP(NONE, "", +1, "push none")                                                     \
  OP(TRUE, "", +1, "push true")                                                     \
  OP(FALSE, "", +1, "push false")                                                   \
  OP(POP, "", -1, "drop the top value")                                             \
  OP(GET_GLOBAL, "G", +1, "push global slot G")                                     \
  OP(SET_GLOBAL, "G", -1, "pop into global slot G")                                 \
  OP(GET_LOCAL, "L", +1, "push local slot L")                                       \
  OP(SET_LOCAL, "L", -1, "pop into local slot L")                                   \
  OP(GET_UPVAL, "U", +1, "push captured value U of the running function")           \
  OP(SELF, "", +1, "push the running function (a nested function calling itself)")  \
  OP(CLOSURE, "Kc", 0, "make a function of code K; pops its defaults; captures follow") \
  OP(UNPACK, "N", 0, "pop a list or tensor of N items; push them, the first on top") \
  OP(FOR_ITER, "D", +1, "[seq, i]: push seq[i] and advance i, or jump forward D")   \
  OP(FOR_RANGE, "D", +1, "[cur, stop, step]: push cur and advance, or jump forward D") \
  OP(IMPORT, "K", 0, "run the file named by string constant K, once per state")     \
  OP(NEG, "", 0, "negate the top value")                                            \
  OP(BITNOT, "", 0, "bitwise/logical not (~) of the top value")                     \
  OP(NOT, "", 0, "boolean `not` of the top value's truth")                          \
  OP(BINARY, "B", -1, "apply binary operator B (an mq_binop_token) to the top two") \
  OP(FUSED, "KD", 0, "run fused program K (vm/fuse.h): push its value and jump forward D, or do nothing") \
  OP(LIST, "n", 0, "pop N values, push them as a list (N - 1 less on the stack)")   \
  OP(TENSORIZE, "", 0, "a nested list whose leaves are all numbers becomes a tensor") \
  OP(INDEX, "Ni", 0, "index: N item kinds follow as bytes; pops object and items")  \
  OP(CALL, "A", 0, "call with A positional arguments")                              \
  OP(CALL_KW, "AK", 0, "call with A arguments, the last ones named by list K")      \
  OP(ECHO, "", -1, "pop; in echo mode print it and bind it to `_`")                 \
  OP(JUMP, "D", 0, "jump forward by D")                                             \
  OP(JUMP_IF_FALSE, "D", -1, "pop; jump forward by D if falsy")                     \
  OP(JUMP_IF_FALSE_KEEP, "D", 0, "jump forward by D if the top is falsy, else pop") \
  OP(JUMP_IF_TRUE_KEEP, "D", 0, "jump forward by D if the top is truthy, else pop") \
  OP(LOOP, "d", 0, "jump backward by D (polls the interrupt flag)")                 \
  OP(RETURN, "", 0, "return the top value to the caller")                          \
  OP(TRY, "D", 0, "begin a try block; a runtime error goes forward by D with its error value pushed") \
  OP(END_TRY, "", 0, "end the innermost try or no_grad block")                      \
  OP(FIELD, "KD", 0, "if the top is an error value: replace it by its field named by K and jump forward D") \
  OP(SWAP, "", 0, "swap the top two values")                                        \
  OP(DUP2, "", +2, "push the top two values again (x[i] += v reads x[i] first)")      \
  OP(NO_GRAD, "", 0, "begin a no_grad block: autograd records nothing until its END_TRY") \
  OP(DICT, "n", 0, "pop N key, value pairs, push them as a dict (2N - 1 less on the stack)") \
  OP(APPEND, "N", -1, "pop a value; append it to the list N values below the new top") \
  OP(DICT_SET, "N", -2, "pop a value and a key; set them in the dict N values below the new top") \
  OP(GET_METHOD, "GN", +1, "push global G, the function of x.f (x on top; N: 1 a call x.f(...), 0 x.f)") \
  OP(DEL_INDEX, "", -2, "pop index, object: del object[index] (a dict's key, a list's item)") \
  OP(DEL_GLOBAL, "G", 0, "del name: unbind global slot G, or give a shadowed builtin back") \
  OP(STORE_INDEX, "NNi", 0, "pop value, items, object: push object with object[items] = value (first N: MQ_STORE_* bits; N item kinds follow)") \
  OP(DUPN, "N", 0, "push the top N values again (x[i, j] += v reads x[i, j] first)") \
  OP(CALL_UPDATE, "AKN", 0, "x.f_(...): call f with A arguments (K: keyword names, 65535 none), fit the result to x, the first (flags N)") \
  OP(UPDATE_BINARY, "B", -1, "x op= v: BINARY B of x and v, fitted to x when x is a tensor (torch's in-place op)")

typedef enum mq_opcode {
#define OP(name, operands, effect, doc) MQ_OP_##name,
  MQ_OPCODES(OP)
#undef OP
  MQ_OP__COUNT
} mq_opcode;

/* Capture descriptors after CLOSURE, two bytes each: kind, index. */
enum { MQ_CAP_LOCAL = 0, MQ_CAP_UPVAL = 1, MQ_CAP_SELF = 2 };

/* Index item kinds that follow an INDEX instruction, one byte each. */
enum {
  MQ_IXB_VALUE = 0,    /* one value: an int selects, none adds an axis */
  MQ_IXB_ELLIPSIS = 1, /* no value */
  MQ_IXB_SLICE = 8     /* | 1 start, | 2 stop, | 4 step: those values present */
};

/* The binary operators: the operand of BINARY, and what the parser records
 * in a BINARY node's op. */
#define MQ_BINOP_TOKENS(X)                                                     \
  X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(FLOORDIV, "//")           \
  X(MOD, "%") X(POW, "**") X(MATMUL, "@")                                      \
  X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=") X(EQ, "==") X(NE, "!=")        \
  X(BAND, "&") X(BOR, "|") X(BXOR, "^") X(IN, "in") X(SHL, "<<") X(SHR, ">>")

typedef enum mq_binop_token {
#define X(n, s) MQ_TOK_##n,
  MQ_BINOP_TOKENS(X)
#undef X
  MQ_TOK__COUNT
} mq_binop_token;

/* STORE_INDEX's first operand: a store of the object follows (a tensor may
 * take the new value); the value is x[items] op v (x[items] op= v). */
enum { MQ_STORE_STORED = 1, MQ_STORE_AUG = 2 };

#endif
