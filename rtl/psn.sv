// psn: the responder's PSN classifier (model/twin.h "psn"; IBA 9.7.5.1 and C9-148..C9-150).
// A request's 24-bit PSN against the expected PSN, in serial-number arithmetic: EXPECTED,
// DUPLICATE (behind, within 2^23) or AHEAD (a sequence error; the first one since the expected
// PSN last arrived earns a NAK). Answered combinationally in the cycle the request is issued:
// the request is taken together with its answer (req_ready follows resp_ready).
`default_nettype none

module psn
  import hca_pkg::*;
(
  // clock and synchronous active-high reset (they clock the statistics counter only)
  input  wire logic                    clk,
  input  wire logic                    rst,
  // the current cycle (the transactor's count; cycles it skips count too): for the checks
  input  wire logic [63:0]             now,
  // request (valid/ready): a packet's PSN, the QP's expected PSN and its NAK-outstanding flag
  input  wire logic                    req_valid,
  output logic                         req_ready,
  input  wire logic [HCA_PSN_BITS-1:0] req_psn,
  input  wire logic [HCA_PSN_BITS-1:0] req_epsn,
  input  wire logic                    req_nak_sent,
  // response (valid/ready): valid with the request, in its cycle
  output logic                         resp_valid,
  input  wire logic                    resp_ready,
  output hm_psn_class_e                resp_cls,
  output logic                         resp_send_nak,
  output logic                         resp_nak_sent,
  // the first cycle the block has work of its own: never (all ones)
  output logic [63:0]                  quiet_until,
  // statistics: sequence NAKs decided since reset
  output logic [31:0]                  stat_naks
);

  logic [HCA_PSN_BITS-1:0] diff;
  logic                    req_fire;

  // psn - epsn modulo 2^24: zero is EXPECTED, the sign bit (bit 23) says behind (DUPLICATE),
  // anything else is ahead.
  assign diff = req_psn - req_epsn;
  assign req_ready = resp_ready;
  assign resp_valid = req_valid;
  assign req_fire = req_valid && req_ready;
  assign quiet_until = '1;

  always_comb begin
    if (diff == '0) begin
      resp_cls = HM_PSN_EXPECTED;
      resp_send_nak = 1'b0;
      resp_nak_sent = 1'b0;
    end else if (diff[HCA_PSN_BITS-1]) begin
      resp_cls = HM_PSN_DUPLICATE;
      resp_send_nak = 1'b0;
      resp_nak_sent = req_nak_sent;
    end else begin
      resp_cls = HM_PSN_AHEAD;
      resp_send_nak = !req_nak_sent;
      resp_nak_sent = 1'b1;
    end
  end

  always_ff @(posedge clk) begin
    if (rst) stat_naks <= '0;
    else if (req_fire && resp_send_nak) stat_naks <= stat_naks + 32'd1;
  end

  // ---- assertions (rtl/prim/hs_check.sv, txn_check.sv) ----
  hs_check #(.W(2 * HCA_PSN_BITS + 1)) chk_req (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_psn, req_epsn, req_nak_sent}));
  hs_check #(.W(4)) chk_resp (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready),
    .payload({resp_cls, resp_send_nak, resp_nak_sent}));
  txn_check #(.MAX_LATENCY(0), .DEPTH(1)) chk_txn (
    .clk, .rst, .now, .req_valid, .req_fire, .resp_valid, .resp_fire(resp_valid && resp_ready));

endmodule

`default_nettype wire
