// sched: send-queue doorbell decode and the round-robin send arbiter (model/twin.h "sched").
// A doorbell's 16-bit producer index is extended next to the QP's 32-bit one and checked
// against the ring (IBA o10-2.2-ish software misuse: ignored); a QP with new work becomes
// pending at the tail of a FIFO of QPNs, each QP in it at most once (a pending bit per QPN).
// The arbiter serves the head. One request per cycle; a doorbell's verdict comes req_lat
// cycles after it is accepted (a programmed pipeline delay, pipe.doorbell_cycles).
`default_nettype none

module sched
  import hca_pkg::*;
#(
  // QPN capacity: pending bits and FIFO entries for QPNs 0 .. NQP-1 (hca.max_qp + 2 at most)
  parameter int unsigned NQP = 131074,
  localparam int unsigned QW = $clog2(NQP),
  localparam int unsigned CW = $clog2(NQP + 1)
) (
  // clock and synchronous active-high reset; after reset the block clears the pending bits of
  // QPNs 0 .. cfg_nqp-1, one per cycle, with req_ready low
  input  wire logic                    clk,
  input  wire logic                    rst,
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
  // response (valid/ready; PUSH and POP: the cycle of acceptance; DOORBELL: req_lat cycles
  // after it)
  output logic                         resp_valid,
  input  wire logic                    resp_ready,
  output logic [1:0]                   resp_op,
  output hm_sched_verdict_e            resp_verdict,   // DOORBELL
  output logic [31:0]                  resp_new_pi,    // DOORBELL: QUEUED and FLUSH, else 0
  output logic                         resp_queued,    // PUSH: false if it was pending
  output logic                         resp_pop_valid, // POP: false if none was pending
  output logic [HCA_QPN_BITS-1:0]      resp_qpn,       // POP: the QP served, else 0
  // status: QPs pending, and the reset sweep still running
  output logic [CW-1:0]                stat_len,
  output logic                         stat_init,
  // the first cycle the block has work of its own: 0 (now) during the reset sweep and while a
  // verdict is on its way, else never (all ones)
  output logic [63:0]                  quiet_until
);

  localparam logic [1:0] OP_DOORBELL = 2'd0;
  localparam logic [1:0] OP_PUSH = 2'd1;
  localparam logic [1:0] OP_POP = 2'd2;

  // per-QP pending bits and the FIFO of pending QPNs (a ring of NQP entries)
  logic          pending [NQP];
  logic [QW-1:0] fifo    [NQP];
  logic [QW-1:0] head, tail;
  logic [CW-1:0] len, nqp;
  // reset sweep over the pending bits
  logic          init;
  logic [QW-1:0] init_idx;
  // doorbell verdict on its way out: delay counter and the held result
  logic          db_busy;
  logic [31:0]   db_cnt;
  hm_sched_verdict_e db_verdict;
  logic [31:0]   db_new_pi;

  logic              accept, now_answer, resp_fire, qpn_ok, can_enq, enq, deq;
  logic [QW-1:0]     qidx;
  logic [31:0]       ext, ahead;
  logic              bad_state, bad_index, flush;
  hm_sched_verdict_e verdict;
  logic [31:0]       new_pi;

  // A request answered in its own cycle is taken only together with its answer.
  assign now_answer = req_op != OP_DOORBELL || req_lat == '0;
  assign req_ready = !init && !db_busy && (resp_ready || !now_answer);
  assign accept = req_valid && req_ready;
  assign resp_fire = resp_valid && resp_ready;
  assign quiet_until = (init || db_busy) ? 64'd0 : '1;
  assign stat_len = len;
  assign stat_init = init;

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

  // ---- arbiter ----
  assign qpn_ok = 32'(req_qpn) < 32'(nqp);
  assign qidx = QW'(req_qpn);
  assign can_enq = qpn_ok && !pending[qidx];
  assign enq = accept && can_enq &&
               (req_op == OP_PUSH || (req_op == OP_DOORBELL && verdict == HM_SCHED_QUEUED));
  assign deq = accept && req_op == OP_POP && len != '0;

  // ---- response ----
  always_comb begin
    resp_valid = 1'b0;
    resp_op = req_op;
    resp_verdict = HM_SCHED_QUEUED;
    resp_new_pi = '0;
    resp_queued = 1'b0;
    resp_pop_valid = 1'b0;
    resp_qpn = '0;
    if (db_busy) begin
      resp_valid = db_cnt == '0;
      resp_op = OP_DOORBELL;
      resp_verdict = db_verdict;
      resp_new_pi = db_new_pi;
    end else if (req_valid && !init && now_answer) begin
      case (req_op)
        OP_DOORBELL: begin
          resp_valid = req_lat == '0;
          resp_verdict = verdict;
          resp_new_pi = new_pi;
        end
        OP_PUSH: begin
          resp_valid = 1'b1;
          resp_queued = can_enq;
        end
        default: begin
          resp_valid = 1'b1;
          resp_pop_valid = len != '0;
          if (len != '0) resp_qpn = HCA_QPN_BITS'(fifo[head]);
        end
      endcase
    end
  end

  // ---- state ----
  always_ff @(posedge clk) begin
    if (rst) begin
      init <= 1'b1;
      init_idx <= '0;
      nqp <= cfg_nqp;
      head <= '0;
      tail <= '0;
      len <= '0;
      db_busy <= 1'b0;
      db_cnt <= '0;
      db_verdict <= HM_SCHED_QUEUED;
      db_new_pi <= '0;
    end else begin
      if (init) begin
        pending[init_idx] <= 1'b0;
        init_idx <= init_idx + QW'(1);
        if (32'(init_idx) + 32'd1 >= 32'(nqp)) init <= 1'b0;
      end
      if (db_busy) begin
        if (db_cnt != '0) db_cnt <= db_cnt - 32'd1;
        else if (resp_ready) db_busy <= 1'b0;
      end else if (accept && req_op == OP_DOORBELL && req_lat != '0) begin
        db_busy <= 1'b1;
        db_cnt <= req_lat - 32'd1;
        db_verdict <= verdict;
        db_new_pi <= new_pi;
      end
      if (enq) begin
        pending[qidx] <= 1'b1;
        fifo[tail] <= qidx;
        tail <= (32'(tail) == NQP - 1) ? '0 : tail + QW'(1);
        len <= len + CW'(1);
      end else if (deq) begin
        pending[fifo[head]] <= 1'b0;
        head <= (32'(head) == NQP - 1) ? '0 : head + QW'(1);
        len <= len - CW'(1);
      end
    end
  end

  // ---- assertions (rtl/prim/hs_check.sv, txn_check.sv) ----
  hs_check #(.W(2 + 32 * 4 + HCA_QPN_BITS + 16 + 3)) chk_req (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_op, req_lat, req_qpn, req_pi16, req_state, req_sq_pi, req_sq_done,
              req_sq_entries}));
  hs_check #(.W(2 + 2 + 32 + 1 + 1 + HCA_QPN_BITS)) chk_resp (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready),
    .payload({resp_op, resp_verdict, resp_new_pi, resp_queued, resp_pop_valid, resp_qpn}));
  txn_check #(.MAX_LATENCY(100000 + 16), .DEPTH(1)) chk_txn (
    .clk, .rst, .req_valid, .req_fire(accept), .resp_valid, .resp_fire);

endmodule

`default_nettype wire
