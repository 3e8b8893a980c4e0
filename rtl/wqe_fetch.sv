// wqe_fetch: the send WQE fetcher (model/twin.h "wqe_fetch", docs/blocks/wqe_fetch.md). Three
// operations on one request port (req_op):
//   GET (0)      WQE req_idx for the requester. Outside the window [lo, fetched) the window
//                moves: a DMA read of up to req_prefetch posted WQEs from idx, contiguous in the
//                ring (it stops at the ring's end), into the WQE buffer at idx's slot; the answer
//                comes with the read's completion: FAILED (its error) or WAIT. Inside: FAILED
//                (the window's read failed), WAIT (it completes after req_time) or READY, the
//                WQE decoded DECODE_CYCLES after req_cycle; when idx is the window's last WQE
//                and more are posted, the read of the next ones is issued then, and the answer
//                waits for it.
//   PREFETCH (1) a send doorbell: when nothing is fetched ahead (fetched == idx, more posted)
//                and the requester is not inside a WQE (req_busy), the read of the window from
//                idx, answered WAIT or FAILED with its completion; else IDLE.
//   CHECK (2)    the validation of a fetched WQE from its fields, by wqe.def and verr.def (the
//                tables in hca_pkg): an opcode the QP type allows, a UD address vector in range,
//                an inline length or scatter/gather count that fits the stride and MAX_SGE, a
//                message length within 2^31 (UD: the MTU), an atomic of 8 bytes.
// The window (lo, fetched, err, ready) is context the caller keeps; the answer carries it back.
// Answers are registered (valid/ready); one without a read comes the cycle after the request,
// READY after the decode. A read requested in the cycle the request is taken (a GET outside the
// window, a PREFETCH) is presented combinationally with it; both are taken by the same edge.
// Times (req_time, window ready, dma_cpl_time) are simulated picoseconds from the DMA engine's
// clock domain; cycles are the core's (docs/rtl.md, "The DMA port").
`default_nettype none

module wqe_fetch
  import hca_pkg::*;
#(
  parameter int unsigned DECODE_CYCLES = 8,      // decode and validate: a property of the RTL
  parameter int unsigned MAX_SGE = 64,           // scatter/gather entries a WQE may carry
  parameter int unsigned TAG_BITS = 4,           // DMA tags
  parameter int unsigned MAX_DMA_LATENCY = 1000000, // cycles a read may take (the checks)
  parameter int unsigned MAX_HOLD = 0            // cycles a consumer holds an answer
) (
  input  wire logic                    clk,
  input  wire logic                    rst,
  input  wire logic [63:0]             now,
  // request (valid/ready)
  input  wire logic                    req_valid,
  output logic                         req_ready,
  input  wire logic [1:0]              req_op,        // GET, PREFETCH, CHECK
  input  wire logic [63:0]             req_cycle,     // the request's cycle (in.cycle)
  input  wire logic [63:0]             req_time,      // ... and time, ps
  input  wire logic [31:0]             req_idx,
  input  wire logic                    req_busy,
  input  wire logic [31:0]             req_sq_pi,
  input  wire logic [31:0]             req_sq_entries,
  input  wire logic [31:0]             req_sq_stride,
  input  wire logic [63:0]             req_sq,
  input  wire logic [31:0]             req_prefetch,
  input  wire logic [31:0]             req_win_lo,
  input  wire logic [31:0]             req_win_fetched,
  input  wire logic                    req_win_err,
  input  wire logic [63:0]             req_win_ready,
  // CHECK: the QP and the WQE's fields
  input  wire hca_qpt_e                req_qp_type,
  input  wire logic [31:0]             req_mtu,
  input  wire logic [7:0]              req_nports,
  input  wire logic [7:0]              req_opcode,
  input  wire logic [7:0]              req_flags,
  input  wire logic [31:0]             req_num_sge,
  input  wire logic [31:0]             req_inline_len,
  input  wire logic [MAX_SGE*32-1:0]   req_sge_len,   // entry i: bits [32*i +: 32]
  input  wire logic [31:0]             req_ud_remote_qpn,
  input  wire logic [7:0]              req_ud_sl,
  input  wire logic [7:0]              req_ud_port,
  input  wire logic [31:0]             req_ud_flow_label,
  // response (valid/ready)
  output logic                         resp_valid,
  input  wire logic                    resp_ready,
  output hm_fetch_result_e             resp_result,
  output logic [63:0]                  resp_decoded,
  output logic [7:0]                   resp_reads,
  output logic [31:0]                  resp_win_lo,
  output logic [31:0]                  resp_win_fetched,
  output logic                         resp_win_err,
  output logic [63:0]                  resp_win_ready,
  output hca_wc_e                      resp_status,
  output hca_verr_e                    resp_verr,
  output logic [63:0]                  resp_len,
  // the DMA port (master): tagged requests, completions in any order
  output logic                         dma_req_valid,
  input  wire logic                    dma_req_ready,
  output logic                         dma_req_write,
  output logic [TAG_BITS-1:0]          dma_req_tag,
  output logic [63:0]                  dma_req_addr,
  output logic [31:0]                  dma_req_off,
  output logic [31:0]                  dma_req_len,
  input  wire logic                    dma_cpl_valid,
  output logic                         dma_cpl_ready,
  input  wire logic [TAG_BITS-1:0]     dma_cpl_tag,
  input  wire logic                    dma_cpl_write,
  input  wire logic                    dma_cpl_err,
  input  wire logic [63:0]             dma_cpl_time,
  // the first cycle the block has work of its own: the decode's end, now with an answer
  // waiting, else never (a read's completion is the DMA engine's to bring)
  output logic [63:0]                  quiet_until,
  // statistics since reset
  output logic [31:0]                  stat_reads,
  output logic [31:0]                  stat_read_errs,
  output logic [31:0]                  stat_checks,
  output logic [31:0]                  stat_refused
);

  // ---- parameter checks at elaboration ----
  if (DECODE_CYCLES < 1 || DECODE_CYCLES > 1000)
    $error("wqe_fetch: DECODE_CYCLES = %0d, must be 1 .. 1000", DECODE_CYCLES);
  if (MAX_SGE < 1 || MAX_SGE > 255)
    $error("wqe_fetch: MAX_SGE = %0d, must be 1 .. 255", MAX_SGE);
  if (TAG_BITS < 1 || TAG_BITS > 8)
    $error("wqe_fetch: TAG_BITS = %0d, must be 1 .. 8", TAG_BITS);

  localparam logic [1:0] OP_GET = 2'd0, OP_PREFETCH = 2'd1, OP_CHECK = 2'd2;
  typedef enum logic [1:0] { S_IDLE, S_DECODE, S_READ, S_RESP } state_e;

  state_e            state;
  logic [63:0]       decode_end;   // S_DECODE: the cycle of now it ends (cycles skipped count)
  logic              decoded;      // ... reached
  logic              next_read;    // S_DECODE: the next window's read follows it
  logic [31:0]       next_lo, next_fetched;
  logic [63:0]       next_addr;
  logic [31:0]       next_off, next_len;
  logic [63:0]       r_time;       // S_READ: the request's time
  logic              r_ready_op;   // S_READ: a READY's read of the next window
  logic [TAG_BITS-1:0] tag;        // the next read's tag (one read in flight at most)

  logic req_fire, resp_fire, dma_req_fire, dma_cpl_fire;

  assign decoded = state == S_DECODE && now >= decode_end;

  // ---- the window a read from req_idx (or from the window's end) brings in ----
  function automatic logic [31:0] win_n(input logic [31:0] from);
    logic [31:0] slot, n;
    slot = from & (req_sq_entries - 32'd1);
    n = req_sq_pi - from;
    if (n > req_prefetch) n = req_prefetch;
    if (n > req_sq_entries - slot) n = req_sq_entries - slot; // a read stops at the ring's end
    if (n == 32'd0) n = 32'd1;
    return n;
  endfunction

  logic [31:0] now_slot, now_n, ahead_from, ahead_slot, ahead_n;
  logic        in_win, has_next, prefetch_due, read_now;

  assign now_slot = req_idx & (req_sq_entries - 32'd1);
  assign now_n = win_n(req_idx);
`ifdef HCA_RTL_BUG
  // test-only bug (HCASIM_RTL_BUG=wqe_fetch): the next window is read from one WQE too far
  assign ahead_from = req_win_fetched + 32'd1;
`else
  assign ahead_from = req_win_fetched;
`endif
  assign ahead_slot = ahead_from & (req_sq_entries - 32'd1);
  assign ahead_n = win_n(ahead_from);
  assign in_win = req_idx - req_win_lo < req_win_fetched - req_win_lo;
  assign has_next = req_idx + 32'd1 == req_win_fetched && req_win_fetched != req_sq_pi;
  assign prefetch_due = req_idx == req_win_fetched && req_win_fetched != req_sq_pi && !req_busy;
  // a read issued with the request itself
  assign read_now = state == S_IDLE && req_valid &&
                    ((req_op == OP_GET && !in_win) || (req_op == OP_PREFETCH && prefetch_due));

  // ---- CHECK: the WQE's fields, decided by the edge that takes the request (a registered
  // answer: the 64-entry length sum is evaluated only for a CHECK, not in every cycle) ----
  function automatic logic ud_ok();
    return req_ud_remote_qpn <= 32'hffffff && req_ud_sl < 8'd16 &&
           req_ud_flow_label < 32'h100000 &&
           (req_ud_port == 8'd0 || req_ud_port <= req_nports);
  endfunction

  // the first check that fails (verr.def order), before the length
  function automatic hca_verr_e check_fields();
    logic [31:0] room, qpts;
    logic        inl;
    room = req_sq_stride - 32'(HCA_WQE_BASE_BYTES);
    inl = (req_flags & 8'(HCA_WQE_F_INLINE)) != 8'd0;
    qpts = hca_wqe_op_qpts(req_opcode);
    if (!qpts[5'(req_qp_type)]) return HCA_VERR_WQE_OPCODE;
    if (req_qp_type == HCA_QPT_UD && !ud_ok()) return HCA_VERR_WQE_UD_AV;
    if (inl && req_inline_len > room) return HCA_VERR_WQE_INLINE_LEN;
    if (!inl && (req_num_sge > room / 32'(HCA_SGE_BYTES) || req_num_sge > 32'(MAX_SGE)))
      return HCA_VERR_WQE_NUM_SGE;
    return HCA_VERR_NONE;
  endfunction

  // the message length (0 when a check before it failed)
  function automatic logic [63:0] check_len(input hca_verr_e v1);
    logic [63:0] sum;
    sum = '0;
    if (v1 != HCA_VERR_NONE) return '0;
    if ((req_flags & 8'(HCA_WQE_F_INLINE)) != 8'd0) return 64'(req_inline_len);
    for (int unsigned i = 0; i < MAX_SGE; i++)
      if (32'(i) < req_num_sge) sum = sum + 64'(req_sge_len[32*i +: 32]);
    return sum;
  endfunction

  function automatic hca_verr_e check_verr(input hca_verr_e v1, input logic [63:0] len);
    if (v1 != HCA_VERR_NONE) return v1;
    if (len > 64'h80000000 || (req_qp_type == HCA_QPT_UD && len > 64'(req_mtu)))
      return HCA_VERR_WQE_MSG_LEN;
    if (hca_wqe_op_class(req_opcode) == 8'(HCA_WQE_CLASS_ATOMIC) && len != 64'd8)
      return HCA_VERR_WQE_ATOMIC_LEN;
    return HCA_VERR_NONE;
  endfunction

  // ---- the ports ----
  assign req_ready = state == S_IDLE && (!read_now || dma_req_ready);
  assign req_fire = req_valid && req_ready;
  assign resp_valid = state == S_RESP || (decoded && !next_read);
  assign resp_fire = resp_valid && resp_ready;
  assign dma_req_valid = read_now || (decoded && next_read);
  assign dma_req_write = 1'b0;
  assign dma_req_tag = tag;
  assign dma_req_addr = read_now ? req_sq + 64'(now_slot) * 64'(req_sq_stride) : next_addr;
  assign dma_req_off = read_now ? now_slot * req_sq_stride : next_off;
  assign dma_req_len = read_now ? now_n * req_sq_stride : next_len;
  assign dma_req_fire = dma_req_valid && dma_req_ready;
  assign dma_cpl_ready = state == S_READ;
  assign dma_cpl_fire = dma_cpl_valid && dma_cpl_ready;
  assign quiet_until = state == S_DECODE ? (decoded ? now : decode_end) :
                       state == S_RESP ? now : '1;

  // ---- the request taken ----
  task automatic take();
    hca_verr_e   v1, v;
    logic [63:0] len;
    resp_reads <= 8'(read_now);
    resp_decoded <= '0;
    resp_status <= HCA_WC_SUCCESS;
    resp_verr <= HCA_VERR_NONE;
    resp_len <= '0;
    resp_win_lo <= req_win_lo;
    resp_win_fetched <= req_win_fetched;
    resp_win_err <= req_win_err;
    resp_win_ready <= req_win_ready;
    r_time <= req_time;
    r_ready_op <= 1'b0;
    if (req_op == OP_CHECK) begin
      v1 = check_fields();
      len = check_len(v1);
      v = check_verr(v1, len);
      resp_status <= hca_verr_status(v);
      resp_verr <= v;
      resp_len <= len;
      stat_checks <= stat_checks + 32'd1;
      stat_refused <= stat_refused + 32'(v != HCA_VERR_NONE);
      state <= S_RESP;
    end else if (read_now) begin
      resp_win_lo <= req_idx;
      resp_win_fetched <= req_idx + now_n;
      state <= S_READ;
    end else if (req_op == OP_PREFETCH) begin
      resp_result <= HM_FETCH_IDLE;
      state <= S_RESP;
    end else if (req_win_err || req_win_ready > req_time) begin
      resp_result <= req_win_err ? HM_FETCH_FAILED : HM_FETCH_WAIT;
      state <= S_RESP;
    end else begin
      resp_result <= HM_FETCH_READY;
      resp_decoded <= req_cycle + 64'(DECODE_CYCLES);
      decode_end <= now + 64'(DECODE_CYCLES);
      next_read <= has_next;
      next_lo <= ahead_from;
      next_fetched <= ahead_from + ahead_n;
      next_addr <= req_sq + 64'(ahead_slot) * 64'(req_sq_stride);
      next_off <= ahead_slot * req_sq_stride;
      next_len <= ahead_n * req_sq_stride;
      state <= S_DECODE;
    end
  endtask

  always_ff @(posedge clk) begin
    if (rst) begin
      state <= S_IDLE;
      decode_end <= '0;
      next_read <= 1'b0;
      next_lo <= '0;
      next_fetched <= '0;
      next_addr <= '0;
      next_off <= '0;
      next_len <= '0;
      r_time <= '0;
      r_ready_op <= 1'b0;
      tag <= '0;
      resp_result <= HM_FETCH_READY;
      resp_decoded <= '0;
      resp_reads <= '0;
      resp_win_lo <= '0;
      resp_win_fetched <= '0;
      resp_win_err <= 1'b0;
      resp_win_ready <= '0;
      resp_status <= HCA_WC_SUCCESS;
      resp_verr <= HCA_VERR_NONE;
      resp_len <= '0;
      stat_reads <= '0;
      stat_read_errs <= '0;
      stat_checks <= '0;
      stat_refused <= '0;
    end else begin
      if (dma_req_fire) begin
        tag <= tag + 1'b1;
        stat_reads <= stat_reads + 32'd1;
      end
      case (state)
        S_IDLE: if (req_fire) take();
        S_DECODE: begin
          if (next_read && dma_req_fire) begin
            resp_reads <= 8'd1;
            resp_win_lo <= next_lo;
            resp_win_fetched <= next_fetched;
            r_ready_op <= 1'b1;
            state <= S_READ;
          end else if (resp_fire) state <= S_IDLE;
        end
        S_READ: if (dma_cpl_fire) begin
          assert (dma_cpl_err || dma_cpl_time > r_time)
            else $error("%m: a read completed without error at its own issue (%0d ps)",
                        dma_cpl_time);
          resp_win_err <= dma_cpl_err;
          resp_win_ready <= dma_cpl_time;
          stat_read_errs <= stat_read_errs + 32'(dma_cpl_err);
          if (!r_ready_op) resp_result <= dma_cpl_err ? HM_FETCH_FAILED : HM_FETCH_WAIT;
          state <= S_RESP;
        end
        S_RESP: if (resp_fire) state <= S_IDLE;
        default: state <= S_IDLE;
      endcase
    end
  end

  // ---- assertions ----
  hs_check #(.W(2 + 64 + 64 + 32)) u_req_hs (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_op, req_cycle, req_time, req_idx})
  );
  hs_check #(.W(2 + 64 + 32 + 32)) u_resp_hs (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready),
    .payload({resp_result, resp_decoded, resp_win_lo, resp_win_fetched})
  );
  txn_check #(.MAX_LATENCY(DECODE_CYCLES + MAX_DMA_LATENCY + MAX_HOLD + 2), .DEPTH(1)) u_txn (
    .clk, .rst, .now, .req_fire, .req_valid, .resp_valid, .resp_fire
  );
  dma_check #(.TAG_BITS(TAG_BITS), .MAX_LATENCY(MAX_DMA_LATENCY)) u_dma (
    .clk, .rst, .now,
    .req_valid(dma_req_valid), .req_ready(dma_req_ready), .req_write(dma_req_write),
    .req_tag(dma_req_tag), .req_addr(dma_req_addr), .req_off(dma_req_off),
    .req_len(dma_req_len),
    .cpl_valid(dma_cpl_valid), .cpl_ready(dma_cpl_ready), .cpl_tag(dma_cpl_tag),
    .cpl_write(dma_cpl_write), .cpl_err(dma_cpl_err), .cpl_time(dma_cpl_time)
  );
  always_ff @(posedge clk) begin
    if (!rst && dma_cpl_fire)
      assert (dma_cpl_tag == tag - 1'b1)
        else $error("%m: completion of tag %0d, the read in flight has tag %0d", dma_cpl_tag,
                    tag - 1'b1);
  end
endmodule

`default_nettype wire
