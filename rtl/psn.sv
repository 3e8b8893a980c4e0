// psn: the responder's PSN classifier (model/twin.h "psn"; IBA 9.7.5.1 and C9-148..C9-150).
// A request's 24-bit PSN against the expected PSN, in serial-number arithmetic: EXPECTED,
// DUPLICATE (behind, within 2^23) or AHEAD (a sequence error; the first one since the expected
// PSN last arrived earns a NAK). Answered combinationally in the cycle the request is issued.
`default_nettype none

module psn
  import hca_pkg::*;
(
  // clock and synchronous active-high reset (they clock the statistics counter only)
  input  wire logic                    clk,
  input  wire logic                    rst,
  // request: a packet's PSN, the QP's expected PSN and its NAK-outstanding flag (always ready)
  input  wire logic                    req_valid,
  output logic                         req_ready,
  input  wire logic [HCA_PSN_BITS-1:0] req_psn,
  input  wire logic [HCA_PSN_BITS-1:0] req_epsn,
  input  wire logic                    req_nak_sent,
  // response: valid in the cycle of the request
  output logic                         resp_valid,
  output hm_psn_class_e                resp_cls,
  output logic                         resp_send_nak,
  output logic                         resp_nak_sent,
  // statistics: sequence NAKs decided since reset
  output logic [31:0]                  stat_naks
);

  logic [HCA_PSN_BITS-1:0] diff;

  // psn - epsn modulo 2^24: zero is EXPECTED, the sign bit (bit 23) says behind (DUPLICATE),
  // anything else is ahead.
  assign diff = req_psn - req_epsn;
  assign req_ready = 1'b1;
  assign resp_valid = req_valid;

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
    else if (req_valid && resp_send_nak) stat_naks <= stat_naks + 32'd1;
  end

endmodule

`default_nettype wire
