// qpc: the QP context cache's tags (model/twin.h "qpc", docs/blocks/qpc.md): which contexts
// are on chip, which are dirty, and their LRU order; on a miss, the write-back of the evicted
// entry and the fill, as tagged DMA requests whose completions come back.
//
// Organisation: the model's cache is fully associative over hca.qpc_cache_entries (1 ..
// 2^20) with exact LRU replacement, and simulated results depend on which contexts miss, so
// the block keeps exactly that replacement. Its tags are a directory indexed by QPN, in three
// SRAMs (rtl/prim/sram.sv, registered read, read-first) of one word per QPN: FLG {cached,
// dirty}, and the LRU list's links PRV and NXT (NIL: all ones); head (the least recently
// used), tail and the entries in use are registers. The capacity is an input (req_entries, a
// register the device programs), so one block serves every configured size.
//
// Operations (req_op):
//   LOOKUP (0): the request's edge reads qpn's words; the next cycle knows hit or miss (and a
//     miss that finds the cache full reads the head's words); the answer is valid
//     HIT_CYCLES = 2 cycles after the request is taken: done and hit, or the miss's first DMA
//     request on the response — WRITE of the victim's slot (tag 1) when the head is evicted
//     dirty, else READ of qpn's slot (tag 0). A hit then moves the entry to the tail (3
//     cycles, req_ready low); a miss waits for its completions.
//   COMPLETE (1): a DMA completion (req_tag), answered in the cycle it is presented (the
//     request is taken only with resp_ready): the write-back's with the fill's READ, the
//     fill's with done; the evicted entry then leaves the list and qpn joins it at the tail.
//   FORGET (2): qpn leaves the cache with no write-back; answered like a lookup (2 cycles),
//     resp_hit = it was cached.
// The DMA requests carry the slot's address, req_base + qpn * HCA_QPC_SLOT_BYTES, and the
// context image's length (hca_qpc, model/hw/formats.def): the transactor performs them on the
// PCIe model at the model's time (sim/vl/qpc.cpp) and hands the completions back.
`default_nettype none

module qpc
  import hca_pkg::*;
#(
  // QPNs 0 .. NQP-1 (each SRAM holds NQP words; its model holds only the words written)
  parameter int unsigned NQP = (1 << HCA_QPN_BITS) + 2,
  // cycles a consumer may hold an answer back (resp_ready low) before txn_check calls it late:
  // 0 for the transactor, which takes every answer at once
  parameter int unsigned MAX_HOLD = 0,
  localparam int unsigned AW = $clog2(NQP + 1)
) (
  input  wire logic                    clk,
  input  wire logic                    rst,
  input  wire logic [63:0]             now,
  // request (valid/ready)
  input  wire logic                    req_valid,
  output logic                         req_ready,
  input  wire logic [1:0]              req_op,      // 0 LOOKUP, 1 COMPLETE, 2 FORGET
  input  wire logic [HCA_QPN_BITS-1:0] req_qpn,
  input  wire logic                    req_write,   // LOOKUP: the use makes the entry dirty
  input  wire logic                    req_tag,     // COMPLETE: the request completed
  input  wire logic [31:0]             req_entries, // LOOKUP: the capacity (>= 1)
  input  wire logic [63:0]             req_base,    // LOOKUP: the backing store's address
  // response (valid/ready)
  output logic                         resp_valid,
  input  wire logic                    resp_ready,
  output logic                         resp_done,   // the lookup is answered
  output logic                         resp_hit,    // LOOKUP: hit; FORGET: was cached
  output logic                         resp_evict,  // LOOKUP miss: the head is evicted
  output logic [HCA_QPN_BITS-1:0]      resp_victim,
  output logic                         resp_wb,     // ... dirty: written back
  output logic [1:0]                   resp_dma,    // 0 none, 1 READ (fill), 2 WRITE (write-back)
  output logic                         resp_dma_tag,
  output logic [HCA_QPN_BITS-1:0]      resp_dma_qpn,
  output logic [63:0]                  resp_dma_addr,
  output logic [31:0]                  resp_dma_len,
  // the first cycle the block has work of its own (never while idle or waiting for a DMA)
  output logic [63:0]                  quiet_until,
  // statistics
  output logic [31:0]                  stat_hits,
  output logic [31:0]                  stat_misses,
  output logic [31:0]                  stat_wbs
);

  if (NQP < 2) $error("qpc: NQP = %0d, must be at least 2", NQP);
  if (NQP > (1 << HCA_QPN_BITS) + 2)
    $error("qpc: NQP = %0d, beyond the %0d-bit QPNs (+2)", NQP, HCA_QPN_BITS);
  if (MAX_HOLD > 1000000) $error("qpc: MAX_HOLD = %0d, at most 1000000", MAX_HOLD);

  localparam int unsigned HIT_CYCLES = 2;
  localparam logic [AW-1:0] NIL = '1;
  localparam logic [1:0] OP_LOOKUP = 2'd0, OP_CPL = 2'd1, OP_FORGET = 2'd2;
  localparam logic [1:0] DMA_NONE = 2'd0, DMA_READ = 2'd1, DMA_WRITE = 2'd2;
  localparam logic TAG_FILL = 1'b0, TAG_WB = 1'b1;
  localparam logic [31:0] IMG_BYTES = 32'(hca_qpc_BITS / 8);

  typedef enum logic [3:0] {
    S_IDLE, S_READ, S_ANS, S_WAIT, S_UNLINK_V, S_FORGET, S_APPEND
  } state_e;
  state_e state;

  // the request being served
  logic [1:0]    q_op;
  logic [AW-1:0] q;
  logic          q_write;
  logic [31:0]   q_entries;
  logic [63:0]   q_base;
  // its words, and the victim's
  logic          q_cached, q_dirty, full, wb_pend, q_move, move_r, hit_ans;
  logic [AW-1:0] q_p, q_n, v, v_n;
  // the list
  logic [AW-1:0] head, tail;
  logic [31:0]   used;

  // the SRAMs: FLG {cached, dirty}, PRV, NXT (NQP + 1 words: addresses as wide as a link)
  logic          f_re, f_we, l_re, p_we, n_we;
  logic [AW-1:0] f_raddr, f_waddr, l_raddr, p_waddr, n_waddr;
  logic [1:0]    f_rdata, f_wdata;
  logic [AW-1:0] p_rdata, n_rdata, p_wdata, n_wdata;

  sram #(.WIDTH(2), .DEPTH(NQP + 1)) flg (
    .clk, .rst, .re(f_re), .raddr(f_raddr), .rdata(f_rdata), .we(f_we), .waddr(f_waddr),
    .wdata(f_wdata));
  sram #(.WIDTH(AW), .DEPTH(NQP + 1)) prv (
    .clk, .rst, .re(l_re), .raddr(l_raddr), .rdata(p_rdata), .we(p_we), .waddr(p_waddr),
    .wdata(p_wdata));
  sram #(.WIDTH(AW), .DEPTH(NQP + 1)) nxt (
    .clk, .rst, .re(l_re), .raddr(l_raddr), .rdata(n_rdata), .we(n_we), .waddr(n_waddr),
    .wdata(n_wdata));

  logic req_fire, resp_fire, cpl_ans, miss_full;

  // idle: lookups and forgets; waiting for a DMA: its completion, taken with its answer
  assign req_ready = !rst && (state == S_IDLE || (state == S_WAIT && resp_ready));
  assign req_fire = req_valid && req_ready;
  assign cpl_ans = state == S_WAIT && req_valid && req_op == OP_CPL;
  assign resp_valid = state == S_ANS || cpl_ans;
  assign resp_fire = resp_valid && resp_ready;
  assign quiet_until = state == S_IDLE || (state == S_WAIT && !req_valid) ? '1 : now;
  // in S_READ: a miss that finds the cache full reads the head, its victim
  assign miss_full = q_op == OP_LOOKUP && !f_rdata[1] && used >= q_entries;
  // in S_READ: a hit on an entry that is not the tail moves to the tail: unlinked now, from the
  // words read, and appended at the edge that takes the answer, so that the block is idle
  // again after a hit's answer
`ifdef HCA_RTL_BUG
  // test-only bug (docs/rtl.md "The injected bugs"): a hit leaves the entry where it is in
  // the LRU order
  assign move_r = 1'b0;
`else
  assign move_r = q_op == OP_LOOKUP && f_rdata[1] && q != tail;
`endif
  // in S_ANS: a hit's answer is taken
  assign hit_ans = state == S_ANS && resp_fire && q_op == OP_LOOKUP && q_cached;

  // ---- reads: qpn's words at the request, the head's in S_READ ----
  always_comb begin
    f_re = 1'b0;
    l_re = 1'b0;
    f_raddr = AW'(req_qpn);
    l_raddr = AW'(req_qpn);
    if (state == S_IDLE && req_fire) begin
      f_re = 1'b1;
      l_re = 1'b1;
    end else if (state == S_READ && miss_full) begin
      f_re = 1'b1;
      l_re = 1'b1;
      f_raddr = head;
      l_raddr = head;
    end
  end

  // ---- the answer ----
  always_comb begin
    resp_done = 1'b0;
    resp_hit = 1'b0;
    resp_evict = 1'b0;
    resp_victim = '0;
    resp_wb = 1'b0;
    resp_dma = DMA_NONE;
    resp_dma_tag = TAG_FILL;
    resp_dma_qpn = '0;
    if (state == S_ANS) begin
      if (q_op == OP_LOOKUP && !q_cached) begin
        resp_evict = full;
        resp_victim = full ? HCA_QPN_BITS'(head) : '0;
        resp_wb = full && f_rdata[0];
        resp_dma = resp_wb ? DMA_WRITE : DMA_READ;
        resp_dma_tag = resp_wb ? TAG_WB : TAG_FILL;
        resp_dma_qpn = resp_wb ? HCA_QPN_BITS'(head) : HCA_QPN_BITS'(q);
      end else begin
        resp_done = 1'b1;
        resp_hit = q_cached;
      end
    end else if (cpl_ans) begin
      if (wb_pend) begin
        resp_dma = DMA_READ;
        resp_dma_qpn = HCA_QPN_BITS'(q);
      end else begin
        resp_done = 1'b1;
      end
    end
  end
  assign resp_dma_addr = resp_dma == DMA_NONE ? '0 :
                         q_base + 64'(resp_dma_qpn) * 64'(HCA_QPC_SLOT_BYTES);
  assign resp_dma_len = resp_dma == DMA_NONE ? '0 : IMG_BYTES;

  // ---- writes: unlink (of qpn, or of the evicted head), append at the tail ----
  // The head's previous link and the tail's next link are never read (head and tail are
  // registers), so they are not written: an unlink writes its neighbours' links, an append the
  // old tail's next and qpn's previous link, one cycle each.
  always_comb begin
    f_we = 1'b0;
    p_we = 1'b0;
    n_we = 1'b0;
    f_waddr = q;
    p_waddr = q;
    n_waddr = q;
    f_wdata = '0;
    p_wdata = NIL;
    n_wdata = NIL;
    if (state == S_READ && move_r) begin
      // a hit's unlink from the words just read: prev.next = next unless it is the head
      // (it is not the tail)
      n_we = q != head;
      n_waddr = p_rdata;
      n_wdata = n_rdata;
      p_we = 1'b1;
      p_waddr = n_rdata;
      p_wdata = p_rdata;
    end else if (state == S_FORGET) begin
      // q_p.next = q_n unless q is the head, q_n.prev = q_p unless it is the tail; its flags
      n_we = q != head;
      n_waddr = q_p;
      n_wdata = q_n;
      p_we = q != tail;
      p_waddr = q_n;
      p_wdata = q_p;
      f_we = 1'b1;
    end else if (state == S_UNLINK_V) begin
      f_we = 1'b1; // the head leaves: its flags cleared
      f_waddr = v;
    end else if (state == S_APPEND || (hit_ans && q_move)) begin
      n_we = tail != NIL;
      n_waddr = tail;
      n_wdata = q;
      p_we = 1'b1;
      p_wdata = tail;
      f_we = 1'b1;
      f_wdata = {1'b1, q_write || (q_cached && q_dirty)};
    end else if (hit_ans && q_write && !q_dirty) begin
      f_we = 1'b1; // a hit that stays at the tail and writes: only its flags change
      f_wdata = 2'b11;
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      state <= S_IDLE;
      {q_op, q, q_write, q_entries, q_base} <= '0;
      {q_cached, q_dirty, full, wb_pend, q_move} <= '0;
      {q_p, q_n, v, v_n} <= '0;
      head <= NIL;
      tail <= NIL;
      used <= '0;
      stat_hits <= '0;
      stat_misses <= '0;
      stat_wbs <= '0;
    end else begin
      case (state)
        S_IDLE: if (req_fire) begin
          state <= S_READ;
          q_op <= req_op;
          q <= AW'(req_qpn);
          q_write <= req_write;
          q_entries <= req_entries;
          q_base <= req_base;
        end
        S_READ: begin
          state <= S_ANS;
          q_cached <= f_rdata[1];
          q_dirty <= f_rdata[0];
          q_p <= p_rdata;
          q_n <= n_rdata;
          full <= miss_full;
          v <= head;
          q_move <= move_r;
          if (move_r && q == head) head <= n_rdata;
        end
        S_ANS: if (resp_fire) begin
          v_n <= n_rdata;
          wb_pend <= resp_dma == DMA_WRITE;
          if (q_op == OP_LOOKUP && q_cached) stat_hits <= stat_hits + 32'd1;
          if (q_op == OP_LOOKUP && !q_cached) stat_misses <= stat_misses + 32'd1;
          if (resp_wb) stat_wbs <= stat_wbs + 32'd1;
          if (q_op == OP_FORGET) state <= q_cached ? S_FORGET : S_IDLE;
          else if (!q_cached) state <= S_WAIT;
          else state <= S_IDLE;
          if (hit_ans && q_move) tail <= q;
        end
        S_WAIT: if (req_fire) begin
          if (wb_pend) wb_pend <= 1'b0;
          else if (full) state <= S_UNLINK_V;
          else begin
            state <= S_APPEND;
            used <= used + 32'd1;
          end
        end
        S_FORGET: begin
          if (q == head) head <= q == tail ? NIL : q_n;
          if (q == tail) tail <= q == head ? NIL : q_p;
          used <= used - 32'd1;
          state <= S_IDLE;
        end
        S_UNLINK_V: begin
          head <= v == tail ? NIL : v_n;
          if (v == tail) tail <= NIL;
          state <= S_APPEND;
        end
        S_APPEND: begin
          if (tail == NIL) head <= q;
          tail <= q;
          state <= S_IDLE;
        end
        default: state <= S_IDLE;
      endcase
    end
  end

  // ---- assertions (rtl/prim/hs_check.sv, txn_check.sv, and the block's own) ----
  hs_check #(.W(2 + HCA_QPN_BITS + 2 + 32 + 64)) chk_req (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_op, req_qpn, req_write, req_tag, req_entries, req_base}));
  hs_check #(.W(4 + HCA_QPN_BITS + 3 + HCA_QPN_BITS + 64 + 32)) chk_resp (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready),
    .payload({resp_done, resp_hit, resp_evict, resp_victim, resp_wb, resp_dma, resp_dma_tag,
              resp_dma_qpn, resp_dma_addr, resp_dma_len}));
  txn_check #(.MAX_LATENCY(HIT_CYCLES + MAX_HOLD), .DEPTH(1)) chk_txn (
    .clk, .rst, .now, .req_valid, .req_fire, .resp_valid, .resp_fire);

  always_ff @(posedge clk) begin
    if (!rst) begin
      assert (!req_valid || req_op == OP_CPL || 32'(req_qpn) < NQP)
        else $error("%m: QPN %0d, the block holds QPNs below %0d", req_qpn, NQP);
      assert (!req_valid || req_op != 2'd3)
        else $error("%m: request op 3, not LOOKUP, COMPLETE or FORGET");
      assert (!(req_valid && req_op == OP_LOOKUP) || req_entries != '0)
        else $error("%m: a lookup with a capacity of 0 entries");
      assert (!(req_valid && state == S_WAIT) || req_op == OP_CPL)
        else $error("%m: op %0d while a DMA request is outstanding", req_op);
      assert (!(req_valid && req_op == OP_CPL) || state == S_WAIT)
        else $error("%m: a completion with no DMA request outstanding");
      assert (!cpl_ans || req_tag == (wb_pend ? TAG_WB : TAG_FILL))
        else $error("%m: completion of tag %0d, the one outstanding is %0d", req_tag, wb_pend);
      assert (state != S_IDLE || used <= 32'(NQP))
        else $error("%m: %0d entries in use", used);
      assert (state != S_IDLE || (head == NIL) == (used == '0))
        else $error("%m: head %0d with %0d entries in use", head, used);
      assert (quiet_until >= now)
        else $error("%m: quiet until cycle %0d, before the current %0d", quiet_until, now);
    end
  end

endmodule

`default_nettype wire
