// cqe: the CQE writer (model/twin.h "cqe"). For one completion and its CQ's context it decides
// WRITE / NEED_CI / OVERRUN (one ring slot stays free, as hca_cq_ring_entries), picks the slot,
// flips the owner bit on each pass over the ring, stamps the output cycle, raises the completion
// event by the CQ's arm state (IBA 11.4.2.2: next, or solicited and error completions), and
// packs the 64-byte CQE image in the little-endian layout of hca_cqe (hca_pkg::hca_cqe_t).
// A post with req_ci_fresh = 0 is answered req_lat cycles after it is accepted (a programmed
// pipeline delay, pipe.cqe_cycles: the answer is due at a cycle of now, and the block has no
// work until then: quiet_until); with req_ci_fresh = 1 in the cycle it is accepted. A
// response not taken (resp_ready low) is held, the block stalled, until it is.
`default_nettype none

module cqe
  import hca_pkg::*;
(
  // clock and synchronous active-high reset
  input  wire logic        clk,
  input  wire logic        rst,
  // the current cycle (the transactor's count; cycles it skips count too): a delayed answer
  // is due at a cycle of it
  input  wire logic [63:0] now,
  // request (valid/ready): the CQ's context
  input  wire logic        req_valid,
  output logic             req_ready,
  input  wire logic [63:0] req_cycle,     // core cycle of the request (the block counts on)
  input  wire logic [31:0] req_lat,       // cycles to the answer unless req_ci_fresh
  input  wire logic [31:0] req_pi,        // the CQ's producer index (32-bit, extended)
  input  wire logic [31:0] req_ci,        // its consumer index
  input  wire logic [4:0]  req_log_size,  // ring of 2^req_log_size entries
  input  wire logic [1:0]  req_arm,       // hca_cq_db_e: 0, ARM_NEXT or ARM_SOLICITED
  input  wire logic        req_solicited, // the completion is for a solicited message
  input  wire logic        req_ci_fresh,  // req_ci was just read from the doorbell record
  // request: the completion's fields (owner, timestamp and the reserved bytes are the block's)
  input  wire logic [31:0] req_byte_len,
  input  wire logic [31:0] req_imm_data,
  input  wire logic [31:0] req_qpn,
  input  wire logic [31:0] req_src_qp,
  input  wire logic [15:0] req_slid,
  input  wire logic [15:0] req_pkey_index,
  input  wire logic [15:0] req_wqe_index,
  input  wire logic [7:0]  req_opcode,
  input  wire logic [7:0]  req_status,
  input  wire logic [7:0]  req_sl,
  input  wire logic [7:0]  req_wc_flags,
  input  wire logic [7:0]  req_dlid_path_bits,
  input  wire logic [7:0]  req_is_send,
  input  wire logic [31:0] req_vendor_err,
  input  wire logic [31:0] req_srqn,
  // response (valid/ready): WRITE carries the slot, the new producer index and arm state, the
  // event flag and the image; the other actions carry zeros
  output logic             resp_valid,
  input  wire logic        resp_ready,
  output hm_cqe_action_e   resp_action,
  output logic [31:0]      resp_slot,
  output logic [31:0]      resp_new_pi,
  output logic [1:0]       resp_new_arm,
  output logic             resp_event,
  output logic [63:0]      resp_cycle,    // the cycle of the answer (the CQE's timestamp)
  output hca_cqe_t         resp_image,
  // the first cycle the block has work of its own: the cycle a delayed answer is due (until
  // it is taken), else never (all ones)
  output logic [63:0]      quiet_until
);

  // The longest wait for an answer: pipe.cqe_cycles at most (sim/config.def), plus slack for a
  // stalled response.
  localparam int unsigned MAX_LATENCY = 100000 + 16;

  // The request as it travels down the pipeline.
  typedef struct packed {
    logic [31:0] pi, ci;
    logic [4:0]  log_size;
    logic [1:0]  arm;
    logic        solicited, ci_fresh;
    logic [31:0] byte_len, imm_data, qpn, src_qp;
    logic [15:0] slid, pkey_index, wqe_index;
    logic [7:0]  opcode, status, sl, wc_flags, dlid_path_bits, is_send;
    logic [31:0] vendor_err, srqn;
  } cqe_req_t;

  cqe_req_t    live, held, r;
  logic        busy, accept, now_answer, resp_fire;
  logic [63:0] due;   // the cycle (of now) the delayed answer is due
  logic [63:0] cyc;   // its cycle as the request counts (req_cycle + req_lat)
  logic [31:0] size, used;
  logic        full, owner, event_now;

  assign live = '{pi: req_pi, ci: req_ci, log_size: req_log_size, arm: req_arm,
                  solicited: req_solicited, ci_fresh: req_ci_fresh, byte_len: req_byte_len,
                  imm_data: req_imm_data, qpn: req_qpn, src_qp: req_src_qp, slid: req_slid,
                  pkey_index: req_pkey_index, wqe_index: req_wqe_index, opcode: req_opcode,
                  status: req_status, sl: req_sl, wc_flags: req_wc_flags,
                  dlid_path_bits: req_dlid_path_bits, is_send: req_is_send,
                  vendor_err: req_vendor_err, srqn: req_srqn};

  // A request answered in its own cycle is taken only together with its answer.
  assign now_answer = req_ci_fresh || req_lat == '0;
  assign req_ready = !busy && (resp_ready || !now_answer);
  assign accept = req_valid && req_ready;
  assign resp_fire = resp_valid && resp_ready;
  assign quiet_until = busy ? due : '1;
  // The answer is formed from the held request at the end of the delay, or from the live one
  // when there is none (ci_fresh, or a zero delay).
  assign r = busy ? held : live;
  assign resp_valid = busy ? now >= due : req_valid && now_answer;
  assign resp_cycle = busy ? cyc : req_cycle;

  // Ring arithmetic: full when pi - ci reaches size - 1; the owner bit is 1 on even passes.
  assign size = 32'd1 << r.log_size;
  assign used = r.pi - r.ci;
  assign full = used >= size - 32'd1;
`ifdef HCA_RTL_BUG
  // Test-only bug (HCASIM_RTL_BUG=cqe): the owner bit never flips.
  assign owner = 1'b1;
`else
  assign owner = !r.pi[r.log_size];
`endif
  assign event_now = r.arm == HCA_CQ_DB_ARM_NEXT ||
                     (r.arm == HCA_CQ_DB_ARM_SOLICITED &&
                      (r.solicited || r.status != HCA_WC_SUCCESS));

  always_comb begin
    resp_action = HM_CQE_WRITE;
    resp_slot = '0;
    resp_new_pi = '0;
    resp_new_arm = '0;
    resp_event = 1'b0;
    resp_image = '0;
    if (full) begin
      resp_action = r.ci_fresh ? HM_CQE_OVERRUN : HM_CQE_NEED_CI;
    end else begin
      resp_slot = r.pi & (size - 32'd1);
      resp_new_pi = r.pi + 32'd1;
      resp_event = event_now;
      resp_new_arm = event_now ? 2'd0 : r.arm;
      resp_image.byte_len = r.byte_len;
      resp_image.imm_data = r.imm_data;
      resp_image.qpn = r.qpn;
      resp_image.src_qp = r.src_qp;
      resp_image.slid = r.slid;
      resp_image.pkey_index = r.pkey_index;
      resp_image.wqe_index = r.wqe_index;
      resp_image.opcode = r.opcode;
      resp_image.status = r.status;
      resp_image.sl = r.sl;
      resp_image.wc_flags = r.wc_flags;
      resp_image.dlid_path_bits = r.dlid_path_bits;
      resp_image.is_send = r.is_send;
      resp_image.vendor_err = r.vendor_err;
      resp_image.srqn = r.srqn;
      resp_image.timestamp = resp_cycle;
      resp_image.owner = {7'd0, owner};
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      due <= '0;
      cyc <= '0;
      held <= '0;
    end else if (busy) begin
      if (resp_fire) busy <= 1'b0;
    end else if (accept && !now_answer) begin
      busy <= 1'b1;
      due <= now + 64'(req_lat);
      cyc <= req_cycle + 64'(req_lat);
      held <= live;
    end
  end

  // ---- assertions (rtl/prim/hs_check.sv, txn_check.sv) ----
  hs_check #(.W($bits(cqe_req_t) + 64 + 32)) chk_req (
    .clk, .rst, .valid(req_valid), .ready(req_ready), .payload({live, req_cycle, req_lat}));
  hs_check #(.W($bits(hca_cqe_t) + 64 + 32 * 2 + 2 + 1 + 2)) chk_resp (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready),
    .payload({resp_image, resp_cycle, resp_slot, resp_new_pi, resp_new_arm, resp_event,
              resp_action}));
  txn_check #(.MAX_LATENCY(MAX_LATENCY), .DEPTH(1)) chk_txn (
    .clk, .rst, .now, .req_valid, .req_fire(accept), .resp_valid, .resp_fire);

endmodule

`default_nettype wire
