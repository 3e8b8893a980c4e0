// timers: the per-QP transport timers (model/twin.h "timers", docs/blocks/timers.md): the local
// ACK timer (IBA 9.7.6.1.3) and the RNR NAK wait (IBA 9.7.5.2.8) of every QP, whose expiries
// drive retransmission. Each timer is one word {armed, at} of an SRAM (rtl/prim/sram.sv,
// registered read, read-first), word 2 * qpn + kind; `at` is the expiry as a core cycle, the
// model's picosecond expiry converted to cycles (model/timers.c), so the block's expiry cycle
// is the model's exactly: no wheel granularity, no rounding.
//
// Operations (req_op): SET (0) arms or restarts (req_arm 1, expiry req_at) or stops (req_arm
// 0) a timer and answers whether it was armed and its expiry then; EXPIRE (1) takes a timer
// that is due at req_cycle: fired when it is armed with an expiry at or before req_cycle (it is
// then dropped), with its expiry; the RNR wait fires whenever it is armed (the model resumes
// at the first expiry of any RNR NAK taken, which one word per timer cannot tell apart). Both read the word at the edge that takes the request and
// answer, and write the word back, in the next cycle (one cycle of latency; req_ready is low
// in it, so no read meets a write of the same word).
//
// Next expiry (min tracking): wake_at is a lower bound of the armed expiries still ahead (an
// arm lowers it to its expiry; a stop or restart leaves it). While idle the block says
// quiet_until = wake_at, so the transactor skips to it. At wake_at the block sweeps the words
// written since reset (0 .. top-1), one read per cycle on the port the requests leave free,
// and takes the earliest expiry still ahead as the new wake_at (never: all ones): exact after
// a sweep, a lower bound in between. Timers due by then are the EXPIRE requests' to take
// (stat_due counts those a sweep saw).
`default_nettype none

module timers
  import hca_pkg::*;
#(
  // timers of QPNs 0 .. NQP-1 (the SRAM holds 2 * NQP words; its model holds only the words
  // written): the default every QPN, and so every hca.max_qp the configuration allows
  parameter int unsigned NQP = (1 << HCA_QPN_BITS) + 2,
  localparam int unsigned AW = $clog2(2 * NQP)
) (
  // clock and synchronous active-high reset (every timer stopped after it)
  input  wire logic                    clk,
  input  wire logic                    rst,
  // the current cycle (the transactor's count; cycles it skips count too)
  input  wire logic [63:0]             now,
  // request (valid/ready)
  input  wire logic                    req_valid,
  output logic                         req_ready,
  input  wire logic                    req_op,     // 0 SET, 1 EXPIRE
  input  wire logic [HCA_QPN_BITS-1:0] req_qpn,
  input  wire logic                    req_kind,   // 0 ACK timer, 1 RNR wait
  input  wire logic                    req_arm,    // SET: arm (1) or stop (0)
  input  wire logic [63:0]             req_at,     // SET, arm: the expiry cycle
  input  wire logic [63:0]             req_cycle,  // the transaction's cycle (EXPIRE: due by)
  // response (valid/ready), the cycle after the request is taken
  output logic                         resp_valid,
  input  wire logic                    resp_ready,
  output logic                         resp_hit,   // SET: was armed; EXPIRE: fired
  output logic [63:0]                  resp_at,    // its expiry then (0 if not armed)
  // the first cycle the block has work of its own: a sweep at wake_at
  output logic [63:0]                  quiet_until,
  // statistics: timers fired, sweeps, and timers a sweep found due
  output logic [31:0]                  stat_fired,
  output logic [31:0]                  stat_sweeps,
  output logic [31:0]                  stat_due
);

  if (NQP < 2) $error("timers: NQP = %0d, must be at least 2", NQP);
  if (NQP > (1 << HCA_QPN_BITS) + 2)
    $error("timers: NQP = %0d, beyond the %0d-bit QPNs (+2)", NQP, HCA_QPN_BITS);

  localparam logic [63:0] NEVER = '1;
  localparam int unsigned WW = 65; // {armed, at}

  // ---- the request in its answer cycle ----
  logic          busy;    // the answer cycle of the request taken at the last edge
  logic          q_op, q_arm, q_kind;
  logic [AW-1:0] q_idx;
  logic [63:0]   q_at, q_cycle;
  logic          req_fire, resp_fire;

  // ---- the SRAM ----
  logic          re, we;
  logic [AW-1:0] raddr, waddr;
  logic [WW-1:0] rdata, wdata;
  logic          w_armed;
  logic [63:0]   w_at;

  // ---- the sweep ----
  logic          sweep_on, sweep_rv, sweep_issue;
  logic [AW:0]   sweep_pos, top;    // next word to read; words 0 .. top-1 were written
  logic [63:0]   sweep_min, wake_at, wake_next;
  logic          r_armed, new_ahead, fired;
  logic [63:0]   r_at;

  assign req_ready = !busy && !rst;
  assign req_fire = req_valid && req_ready;
  assign resp_valid = busy;
  assign resp_fire = resp_valid && resp_ready;
  assign {r_armed, r_at} = rdata;

  // ---- the answer: from the word read ----
  // the ACK timer fires at its expiry; the RNR wait whenever it is armed (the model ends a
  // wait at the first expiry of any RNR NAK it took: docs/blocks/timers.md)
  assign fired = r_armed && (q_kind || r_at <= q_cycle);
  assign resp_hit = q_op ? fired : r_armed;
  assign resp_at = r_armed ? r_at : '0;

  // the word written back: SET stores the request's; an EXPIRE that fired stops the timer
  always_comb begin
    w_armed = q_arm;
    w_at = q_arm ? q_at : '0;
`ifdef HCA_RTL_BUG
    // test-only bug (docs/rtl.md "The injected bugs"): a restart to a later expiry keeps the
    // earlier one
    if (q_arm && r_armed && r_at < q_at) w_at = r_at;
`endif
    if (q_op) begin
      w_armed = 1'b0;
      w_at = '0;
    end
  end
  assign we = resp_fire && (!q_op || fired);
  assign waddr = q_idx;
  assign wdata = {w_armed, w_at};

  // the read port: a request's read, else the sweep's (never in an answer cycle: its write
  // would meet the read, read-first)
  assign sweep_issue = sweep_on && !req_fire && !busy && sweep_pos < top;
  assign re = req_fire || sweep_issue;
  assign raddr = req_fire ? AW'({req_qpn, req_kind}) : sweep_pos[AW-1:0];

  sram #(.WIDTH(WW), .DEPTH(2 * NQP)) ram (
    .clk, .rst, .re, .raddr, .rdata, .we, .waddr, .wdata);

  // an arm with an expiry still ahead lowers the next wake
  assign new_ahead = we && !q_op && q_arm && w_at > now;
  assign quiet_until = busy || sweep_on || wake_at <= now ? now : wake_at;

  always_comb begin
    wake_next = wake_at;
    if (!sweep_on && wake_at <= now) wake_next = NEVER;   // a sweep starts: it finds the next
    else if (sweep_on && sweep_pos >= top && !sweep_rv)   // the sweep ends
      wake_next = sweep_min < wake_at ? sweep_min : wake_at;
    if (new_ahead && w_at < wake_next) wake_next = w_at;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      {q_op, q_arm, q_kind, q_idx, q_at, q_cycle} <= '0;
      sweep_on <= 1'b0;
      sweep_rv <= 1'b0;
      sweep_pos <= '0;
      sweep_min <= NEVER;
      top <= '0;
      wake_at <= NEVER;
      stat_fired <= '0;
      stat_sweeps <= '0;
      stat_due <= '0;
    end else begin
      if (req_fire) begin
        busy <= 1'b1;
        q_op <= req_op;
        q_arm <= req_arm;
        q_kind <= req_kind;
        q_idx <= AW'({req_qpn, req_kind});
        q_at <= req_at;
        q_cycle <= req_cycle;
      end else if (resp_fire) begin
        busy <= 1'b0;
      end
      if (resp_fire && q_op && fired) stat_fired <= stat_fired + 32'd1;
      if (we && w_armed && {1'b0, q_idx} >= top) top <= {1'b0, q_idx} + 1'b1;
      wake_at <= wake_next;
      // the sweep: start, read, take the word read the cycle before, end
      if (!sweep_on && wake_at <= now) begin
        sweep_on <= 1'b1;
        sweep_pos <= '0;
        sweep_min <= NEVER;
        stat_sweeps <= stat_sweeps + 32'd1;
      end else if (sweep_on && sweep_pos >= top && !sweep_rv) begin
        sweep_on <= 1'b0;
      end
      if (sweep_issue) sweep_pos <= sweep_pos + 1'b1;
      sweep_rv <= sweep_issue;
      if (sweep_rv && r_armed) begin
        if (r_at > now) begin
          if (r_at < sweep_min) sweep_min <= r_at;
        end else begin
          stat_due <= stat_due + 32'd1;
        end
      end
    end
  end

  // ---- assertions (rtl/prim/hs_check.sv, txn_check.sv, and the block's own) ----
  hs_check #(.W(1 + HCA_QPN_BITS + 1 + 1 + 64 + 64)) chk_req (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_op, req_qpn, req_kind, req_arm, req_at, req_cycle}));
  hs_check #(.W(65)) chk_resp (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready), .payload({resp_hit, resp_at}));
  txn_check #(.MAX_LATENCY(1), .DEPTH(1)) chk_txn (
    .clk, .rst, .now, .req_valid, .req_fire, .resp_valid, .resp_fire);

  always_ff @(posedge clk) begin
    if (!rst) begin
      assert (!req_valid || 32'(req_qpn) < NQP)
        else $error("%m: QPN %0d, the block holds QPNs below %0d", req_qpn, NQP);
      assert (!(resp_valid && q_op && resp_hit && !q_kind) || resp_at <= q_cycle)
        else $error("%m: fired a timer due at cycle %0d before it, at %0d", resp_at, q_cycle);
      assert (!(sweep_rv && busy))
        else $error("%m: a sweep's read and a request's answer in one cycle");
      assert (sweep_pos <= top)
        else $error("%m: sweep at word %0d, beyond the %0d written", sweep_pos, top);
      assert (quiet_until >= now)
        else $error("%m: quiet until cycle %0d, before the current %0d", quiet_until, now);
    end
  end

endmodule

`default_nettype wire
