// sched: send-queue doorbell decode and the round-robin send arbiter (model/twin.h "sched",
// docs/blocks/sched.md). A doorbell's 16-bit producer index is extended next to the QP's 32-bit
// one and checked against the ring (IBA o10-2.2-ish software misuse: ignored); a QP with new
// work becomes pending at the tail of a FIFO of QPNs, each QP in it at most once. The arbiter
// serves the head.
//
// Per-QP state lives in two SRAMs (rtl/prim/sram.sv, registered read, read-first), in the
// style of Corundum's tx_scheduler_rr: pend (1 bit per QPN: in the FIFO) and fifo (the ring
// of QPNs). Operations flow down a PIPELINE-stage pipeline: stage 0 takes the request and
// issues the RAM read, stage 1 has the read word, stages 2 .. PIPELINE register it (timing),
// and the last stage decides, writes the RAMs back and answers. Hazards are tracked against
// the operations in flight (stages 1 .. PIPELINE), and a request that would read a word an
// earlier operation has yet to write waits (req_ready low):
//   - PUSH (and a doorbell's enqueue) reads pend[qpn]: it waits while an enqueue of the same
//     QPN is in flight, and while a POP is (whose QPN is known only when its read returns);
//   - POP reads fifo[head] and needs the FIFO's length: it waits while an enqueue is in flight;
//   - DOORBELL waits for an empty pipeline, so that its answer (after req_lat cycles, a
//     programmed delay, pipe.doorbell_cycles, due at a cycle of now: the block has no work
//     until then, quiet_until) never meets another.
// PUSH and POP answer PIPELINE cycles after they are taken; the last stage holds while its
// answer is not taken (resp_ready low), and the whole pipeline with it.
`default_nettype none

module sched
  import hca_pkg::*;
#(
  // RAM depth: QPNs 0 .. NQP-1 can be served; the default holds every QPN (24 bits) and so
  // every hca.max_qp the configuration allows (sim/config.def), sized by cfg_nqp at reset
  parameter int unsigned NQP = (1 << HCA_QPN_BITS) + 2,
  // cycles from taking a PUSH or POP to its answer: 1 (the registered read) or more (the read
  // word registered again, for timing); model/twin.h HM_SCHED_PIPELINE is the same
  parameter int unsigned PIPELINE = 2,
  localparam int unsigned QW = $clog2(NQP),
  localparam int unsigned CW = $clog2(NQP + 1)
) (
  // clock and synchronous active-high reset (the RAMs are empty after it)
  input  wire logic                    clk,
  input  wire logic                    rst,
  // the current cycle (the transactor's count; cycles it skips count too): a doorbell's
  // verdict is due at a cycle of it
  input  wire logic [63:0]             now,
  // configuration, sampled during reset: QPNs 0 .. cfg_nqp-1 are served (cfg_nqp <= NQP)
  input  wire logic [CW-1:0]           cfg_nqp,
  // request (valid/ready): op 0 DOORBELL, 1 PUSH, 2 POP and its fields
  input  wire logic                    req_valid,
  output logic                         req_ready,
  input  wire logic [1:0]              req_op,
  input  wire logic [31:0]             req_lat,        // DOORBELL: cycles until the verdict
  input  wire logic [HCA_QPN_BITS-1:0] req_qpn,        // DOORBELL, PUSH
  input  wire logic [15:0]             req_pi16,       // DOORBELL: producer index from the UAR
  input  wire logic [2:0]              req_state,      // DOORBELL: hca_qps_e of the QP
  input  wire logic [31:0]             req_sq_pi,      // DOORBELL: the QP's producer index
  input  wire logic [31:0]             req_sq_done,    // DOORBELL: WQEs completed
  input  wire logic [31:0]             req_sq_entries, // DOORBELL: ring size
  // response (valid/ready; PUSH and POP: PIPELINE cycles after they are taken; DOORBELL:
  // req_lat cycles after it)
  output logic                         resp_valid,
  input  wire logic                    resp_ready,
  output logic [1:0]                   resp_op,
  output hm_sched_verdict_e            resp_verdict,   // DOORBELL
  output logic [31:0]                  resp_new_pi,    // DOORBELL: QUEUED and FLUSH, else 0
  output logic                         resp_queued,    // PUSH: false if it was pending
  output logic                         resp_pop_valid, // POP: false if none was pending
  output logic [HCA_QPN_BITS-1:0]      resp_qpn,       // POP: the QP served, else 0
  // status: QPs pending (committed)
  output logic [CW-1:0]                stat_len,
  // the first cycle the block has work of its own: 0 (now) while an operation is in the
  // pipeline, else the cycle a doorbell's verdict is due (until it is taken), else never (all
  // ones)
  output logic [63:0]                  quiet_until
);

  if (PIPELINE < 1 || PIPELINE > 8)
    $error("sched: PIPELINE = %0d, must be 1 .. 8 (instance %m)", PIPELINE);
  if (NQP < 3 || NQP > (1 << HCA_QPN_BITS) + 2)
    $error("sched: NQP = %0d, must be 3 .. 2^%0d + 2 (instance %m)", NQP, HCA_QPN_BITS);

  localparam logic [1:0] OP_DOORBELL = 2'd0;
  localparam logic [1:0] OP_PUSH = 2'd1;
  localparam logic [1:0] OP_POP = 2'd2;
  localparam logic [1:0] OP_ENQ = 2'd3; // in the pipeline only: a doorbell's enqueue

  // One operation in the pipeline.
  typedef struct packed {
    logic          v;    // an operation is here
    logic [1:0]    op;   // OP_PUSH, OP_POP or OP_ENQ
    logic          ok;   // PUSH/ENQ: QPN in range (pend read issued); POP: an entry was read
    logic [QW-1:0] qpn;  // PUSH/ENQ: the QPN
  } stage_t;

  stage_t        st [1:PIPELINE];
  logic [QW-1:0] word [1:PIPELINE]; // the read word registered again, at stages 2 .. PIPELINE

  // RAM ports
  logic          pend_re, pend_we, pend_rdata, pend_wdata;
  logic [QW-1:0] pend_raddr, pend_waddr;
  logic          fifo_re, fifo_we;
  logic [QW-1:0] fifo_raddr, fifo_waddr, fifo_rdata, fifo_wdata;

  // committed FIFO state, and the issue side of it (POPs taken, not yet committed)
  logic [QW-1:0] head, tail;
  logic [CW-1:0] len, avail, nqp;
  // doorbell verdict on its way out: the cycle (of now) it is due and the held result
  logic              db_busy;
  logic [63:0]       db_due;
  hm_sched_verdict_e db_verdict;
  logic [31:0]       db_new_pi;

  logic              accept, adv, resp_fire, last_answers, db_now, empty;
  logic              enq_inflight, pop_inflight, same_qpn, hazard;
  logic              qpn_ok, is_enq;
  logic [QW-1:0]     qidx;
  logic [31:0]       ext, ahead;
  logic              bad_state, bad_index, flush;
  hm_sched_verdict_e verdict;
  logic [31:0]       new_pi;
  stage_t            s0, last;
  logic [QW-1:0]     word1, last_word;
  logic              last_queued;

  sram #(.WIDTH(1), .DEPTH(NQP)) pend (
    .clk, .rst, .re(pend_re), .raddr(pend_raddr), .rdata(pend_rdata),
    .we(pend_we), .waddr(pend_waddr), .wdata(pend_wdata));
  sram #(.WIDTH(QW), .DEPTH(NQP)) fifo (
    .clk, .rst, .re(fifo_re), .raddr(fifo_raddr), .rdata(fifo_rdata),
    .we(fifo_we), .waddr(fifo_waddr), .wdata(fifo_wdata));

  // ---- doorbell decode ----
  // The 16-bit index extended next to the 32-bit one (it only grows).
  always_comb begin
    ext = {req_sq_pi[31:16], req_pi16};
    if (ext < req_sq_pi) ext = ext + 32'h1_0000;
  end
  assign ahead = ext - req_sq_done;
  assign bad_state = req_state == HCA_QPS_RESET || req_state == HCA_QPS_INIT ||
                     req_state == HCA_QPS_RTR;
  assign bad_index = ahead > req_sq_entries;
  assign flush = req_state == HCA_QPS_ERR || req_state == HCA_QPS_SQE;
  always_comb begin
    if (bad_state) verdict = HM_SCHED_BAD_STATE;
    else if (bad_index) verdict = HM_SCHED_BAD_INDEX;
    else if (flush) verdict = HM_SCHED_FLUSH;
    else verdict = HM_SCHED_QUEUED;
  end
  assign new_pi = (bad_state || bad_index) ? 32'd0 : ext;

  // ---- hazards against the operations in flight ----
  assign qpn_ok = 32'(req_qpn) < 32'(nqp);
  assign qidx = QW'(req_qpn);
  always_comb begin
    enq_inflight = 1'b0;
    pop_inflight = 1'b0;
    same_qpn = 1'b0;
    for (int s = 1; s <= PIPELINE; s++) begin
      if (st[s].v && st[s].op != OP_POP) begin
        enq_inflight = 1'b1;
        if (st[s].qpn == qidx) same_qpn = 1'b1;
      end
      if (st[s].v && st[s].op == OP_POP) pop_inflight = 1'b1;
    end
  end
  assign empty = !enq_inflight && !pop_inflight;
  always_comb begin
    case (req_op)
      OP_DOORBELL: hazard = !empty;
      OP_PUSH: hazard = pop_inflight || same_qpn;
`ifdef HCA_RTL_BUG
      // Test-only bug (HCASIM_RTL_BUG=sched): a POP does not wait for an enqueue in flight,
      // so it may miss the QP a doorbell has just queued (lockstep must catch it).
      default: hazard = 1'b0;
`else
      default: hazard = enq_inflight;
`endif
    endcase
  end

  // ---- the pipeline's last stage: decide, write back, answer ----
  assign last = st[PIPELINE];
  // the read word at stage 1 is the RAM's (registered read)
  assign word1 = st[1].op == OP_POP ? fifo_rdata : QW'(pend_rdata);
  assign last_word = PIPELINE == 1 ? word1 : word[PIPELINE];
  assign last_queued = last.ok && !last_word[0];
  assign last_answers = last.v && last.op != OP_ENQ;
  // the pipeline moves unless its answer waits to be taken
  assign adv = !(last_answers && !resp_ready);

  // ---- request ----
  // A doorbell answered in its own cycle is taken only together with its answer.
  assign db_now = req_op == OP_DOORBELL && req_lat == '0;
  assign req_ready = !db_busy && adv && !hazard && (resp_ready || !db_now);
  assign accept = req_valid && req_ready;
  assign is_enq = req_op == OP_PUSH || (req_op == OP_DOORBELL && verdict == HM_SCHED_QUEUED);
  always_comb begin
    s0 = '0;
    s0.qpn = qidx;
    if (accept && is_enq) begin
      s0.v = 1'b1;
      s0.op = req_op == OP_PUSH ? OP_PUSH : OP_ENQ;
      s0.ok = qpn_ok;
    end else if (accept && req_op != OP_DOORBELL) begin
      s0.v = 1'b1;
      s0.op = OP_POP;
      s0.ok = avail != '0;
    end
  end
  assign pend_re = s0.v && s0.op != OP_POP && s0.ok;
  assign pend_raddr = qidx;
  assign fifo_re = s0.v && s0.op == OP_POP && s0.ok;
  assign fifo_raddr = head;

  // write-back at the last stage (it moves when adv)
  assign pend_we = adv && last.v && (last.op == OP_POP ? last.ok : last_queued);
  assign pend_waddr = last.op == OP_POP ? last_word : last.qpn;
  assign pend_wdata = last.op != OP_POP;
  assign fifo_we = adv && last.v && last.op != OP_POP && last_queued;
  assign fifo_waddr = tail;
  assign fifo_wdata = last.qpn;

  // ---- response ----
  always_comb begin
    resp_valid = 1'b0;
    resp_op = last.op;
    resp_verdict = HM_SCHED_QUEUED;
    resp_new_pi = '0;
    resp_queued = 1'b0;
    resp_pop_valid = 1'b0;
    resp_qpn = '0;
    if (last_answers) begin
      resp_valid = 1'b1;
      resp_queued = last.op == OP_PUSH && last_queued;
      resp_pop_valid = last.op == OP_POP && last.ok;
      if (resp_pop_valid) resp_qpn = HCA_QPN_BITS'(last_word);
    end else if (db_busy) begin
      resp_valid = now >= db_due;
      resp_op = OP_DOORBELL;
      resp_verdict = db_verdict;
      resp_new_pi = db_new_pi;
    end else if (req_valid && db_now && req_ready) begin
      resp_valid = 1'b1;
      resp_op = OP_DOORBELL;
      resp_verdict = verdict;
      resp_new_pi = new_pi;
    end
  end
  assign resp_fire = resp_valid && resp_ready;
  assign stat_len = len;
  assign quiet_until = !empty ? 64'd0 : db_busy ? db_due : '1;

  // ---- state ----
  always_ff @(posedge clk) begin
    if (rst) begin
      nqp <= cfg_nqp;
      head <= '0;
      tail <= '0;
      len <= '0;
      avail <= '0;
      db_busy <= 1'b0;
      db_due <= '0;
      db_verdict <= HM_SCHED_QUEUED;
      db_new_pi <= '0;
      for (int s = 1; s <= PIPELINE; s++) begin
        st[s] <= '0;
        word[s] <= '0;
      end
    end else begin
      if (adv) begin
        st[1] <= s0;
        for (int s = 2; s <= PIPELINE; s++) begin
          st[s] <= st[s-1];
          word[s] <= s == 2 ? word1 : word[s-1];
        end
      end
      if (fifo_re) head <= (32'(head) == NQP - 1) ? '0 : head + QW'(1);
      if (fifo_we) tail <= (32'(tail) == NQP - 1) ? '0 : tail + QW'(1);
      // len: committed; avail: what POPs may still take (enqueues and POPs never overlap)
      if (fifo_we) begin
        len <= len + CW'(1);
        avail <= avail + CW'(1);
      end else begin
        if (pend_we && last.op == OP_POP) len <= len - CW'(1);
        if (fifo_re) avail <= avail - CW'(1);
      end
      if (db_busy) begin
        if (resp_fire && !last_answers) db_busy <= 1'b0;
      end else if (accept && req_op == OP_DOORBELL && req_lat != '0) begin
        db_busy <= 1'b1;
        db_due <= now + 64'(req_lat);
        db_verdict <= verdict;
        db_new_pi <= new_pi;
      end
    end
  end

  // ---- assertions (rtl/prim/hs_check.sv, txn_check.sv, and the pipeline's own) ----
  hs_check #(.W(2 + 32 * 4 + HCA_QPN_BITS + 16 + 3)) chk_req (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_op, req_lat, req_qpn, req_pi16, req_state, req_sq_pi, req_sq_done,
              req_sq_entries}));
  hs_check #(.W(2 + 2 + 32 + 1 + 1 + HCA_QPN_BITS)) chk_resp (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready),
    .payload({resp_op, resp_verdict, resp_new_pi, resp_queued, resp_pop_valid, resp_qpn}));
  txn_check #(.MAX_LATENCY(100000 + PIPELINE + 16), .DEPTH(PIPELINE + 1)) chk_txn (
    .clk, .rst, .now, .req_valid, .req_fire(accept), .resp_valid, .resp_fire);
  always_ff @(posedge clk) begin
    if (!rst) begin
      assert (!(last_answers && (db_busy || (req_valid && db_now && req_ready))))
        else $error("%m: a pipeline answer and a doorbell verdict in the same cycle");
      assert (!(pend_we && last.op == OP_POP) || len != '0)
        else $error("%m: a POP committed from an empty FIFO");
      assert (!fifo_we || 32'(len) < 32'(nqp))
        else $error("%m: FIFO overflow: %0d QPs pending of %0d", len, nqp);
      assert (!req_valid || req_op != OP_ENQ)
        else $error("%m: request op %0d", req_op);
`ifndef HCA_RTL_BUG
      // (left out of the test-only bug, which breaks exactly this rule)
      assert (!(enq_inflight && pop_inflight))
        else $error("%m: an enqueue and a POP in flight together (hazard rule broken)");
`endif
    end
  end

endmodule

`default_nettype wire
