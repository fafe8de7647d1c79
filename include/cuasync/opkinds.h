/**
 * @file cuasync/opkinds.h
 * @brief The kinds of DeviceOp, as one X-macro list.
 *
 * The core, the backends and the tools share this list: the enum
 * #cua_op_kind (cuasync/common.h) and cua_op_kind_name() are generated from
 * it, and a backend or a tool that names or classifies kinds expands it
 * rather than keeping its own table. Modules never link libcuasync, so a
 * backend that wants kind names builds them from the list, for example:
 *
 * @code
 * static const char *kind_name(cua_op_kind k) {
 *   switch (k) {
 * #define NAME(id, val, name, launched, desc) case CUA_OP_##id: return name;
 *     CUA_OP_KIND_MAP(NAME)
 * #undef NAME
 *   default: return "?";
 *   }
 * }
 * @endcode
 */
#ifndef CUASYNC_OPKINDS_H
#define CUASYNC_OPKINDS_H

/**
 * The op kinds: X(ID, value, "name", launched, "description").
 *
 * - ID: the enum constant is CUA_OP_ID.
 * - value: stable, part of the policy and backend ABIs: never changed or
 *   reused; new kinds are appended with the next value (and
 *   #CUA_OP_KIND_COUNT_ grows with them).
 * - name: lower case, as traces, messages and cua_op_kind_name() print it.
 * - launched: 1 if the core hands ops of this kind to the backend's
 *   launch() (cua_backend_op::kind); 0 for kinds the core does itself
 *   (allocation, stream-ordered free, barrier waits, host steps, the
 *   combinators).
 */
#define CUA_OP_KIND_MAP(X)                                                     \
  X(FUNC, 1, "func", 1, "user stream function (launches its own work)")        \
  X(FILL, 2, "fill", 1, "built-in kernel: fill float32 elements")              \
  X(COPY, 3, "copy", 1, "built-in kernel: element copy between buffers")       \
  X(AXPY, 4, "axpy", 1, "built-in kernel: y = a * x + y, float32")             \
  X(SPIN, 5, "spin", 1, "built-in kernel: busy for a given duration")          \
  X(MEMCPY_H2D, 6, "memcpy_h2d", 1, "copy host memory into a buffer")          \
  X(MEMCPY_D2H, 7, "memcpy_d2h", 1, "copy a buffer into host memory")          \
  X(MEMCPY_D2D, 8, "memcpy_d2d", 1,                                            \
    "copy between buffers, also across devices")                               \
  X(MEMSET, 9, "memset", 1, "set bytes of a buffer")                           \
  X(ALLOC, 10, "alloc", 0, "allocate a lazily created buffer, stream-ordered") \
  X(FREE, 11, "free", 0, "free a buffer, stream-ordered after its uses")       \
  X(HOST, 12, "host", 0, "host step: runs on the host, blocks no stream")      \
  X(BARRIER, 13, "barrier", 0, "waits for all work submitted before it")       \
  X(ZIP, 14, "zip", 0, "joins N ops; no work of its own")                      \
  X(UNZIP, 15, "unzip", 0, "selects one result of a zip; no work")             \
  X(MAP, 16, "map", 0, "host-side transform of a result; no device work")      \
  X(THEN, 17, "then", 0, "sequence: second op after the first")                \
  X(SHARED, 18, "shared", 0, "runs its inner op once for all consumers")       \
  X(KERNEL, 19, "kernel", 1, "kernel from a loaded PTX/cubin module")          \
  X(WAIT_NATIVE, 20, "wait_native", 0,                                         \
    "waits for the work queued on a stream the application owns")              \
  X(GRAPH, 21, "graph", 0,                                                     \
    "one launch of a captured graph (cua_graph_launch())")

#endif /* CUASYNC_OPKINDS_H */
