// resp_fe: the responder's front end (model/twin.h "resp_fe"; IBA 9.7.5.1, 9.7.5.1.6, 10.6).
// The checks a request packet (RC, UC, XRC_RECV) goes through before the responder executes
// it, against the QP's responder context handed in with it, in the responder's order:
//   the PSN stage (rtl/psn.sv): RC EXPECTED / DUPLICATE / AHEAD (one NAK per gap); UC, a gap
//     loses the message in progress and what follows up to a FIRST/ONLY;
//   the opcode sequence (FIRST/ONLY only between messages, MIDDLE/LAST only within one of the
//     same kind) and an XRC request's SRQ (a live SRQ of the QP's domain, within a message the
//     one it began with);
//   the opcode valid for the QP type (READ and atomics on reliable QPs only);
//   by kind: the QP's access flags, an atomic's alignment, a WRITE's length against its RETH;
//   the key stage (rtl/mkey.sv): the rkey over the access's range.
// The key table and the SRQ table are the device's: until the block has a DMA port the caller
// hands in the entry of the key the request names and the XRC domain of the SRQ its XRCETH
// names. The checks up to the key run in the cycle the request is taken and are registered;
// the key stage takes its request in the same cycle and answers registered, so the verdict is
// valid the cycle after the request is taken (HM_RESP_FE_LATENCY = 1), held until taken; a new
// request is taken in the cycle the previous answer is.
`default_nettype none

module resp_fe
  import hca_pkg::*;
#(
  parameter int unsigned VA_BITS = 64,  // virtual and device addresses
  parameter int unsigned PDN_BITS = 32, // protection domain numbers
  // the most cycles a consumer holds an answer (resp_ready low) before taking it: bounds the
  // latency txn_check allows; the transactor takes every answer at once
  parameter int unsigned MAX_HOLD = 0
) (
  input  wire logic                    clk,
  input  wire logic                    rst,
  // the current cycle (the transactor's count; cycles it skips count too): for the checks
  input  wire logic [63:0]             now,
  // request (valid/ready): the packet, its opcode decoded by the opcode table (pkt.h) ...
  input  wire logic                    req_valid,
  output logic                         req_ready,
  input  wire logic [1:0]              req_pos,        // HM_POS_*
  input  wire logic [3:0]              req_cls,        // HM_OPC_* of a request
  input  wire logic [HCA_PSN_BITS-1:0] req_psn,
  input  wire logic [31:0]             req_paylen,
  input  wire logic [VA_BITS-1:0]      req_reth_va,
  input  wire logic [31:0]             req_reth_rkey,
  input  wire logic [31:0]             req_reth_len,
  input  wire logic [VA_BITS-1:0]      req_atomic_va,
  input  wire logic [31:0]             req_atomic_rkey,
  input  wire logic [HCA_QPN_BITS-1:0] req_pkt_srqn,   // XRCETH
  // ... the QP and its responder context ...
  input  wire logic [3:0]              req_qp_type,    // HCA_QPT_RC, _UC or _XRC_RECV
  input  wire logic [HCA_QPN_BITS-1:0] req_qpn,
  input  wire logic [31:0]             req_qp_access,  // HCA_ACCESS_*
  input  wire logic [HCA_PSN_BITS-1:0] req_epsn,
  input  wire logic                    req_nak_sent,
  input  wire logic                    req_in_msg,
  input  wire logic                    req_uc_drop,
  input  wire logic                    req_msg_write,  // the message in progress is a WRITE
  input  wire logic [VA_BITS-1:0]      req_wr_va,
  input  wire logic [31:0]             req_wr_rkey,
  input  wire logic [31:0]             req_wr_left,
  input  wire logic [HCA_QPN_BITS-1:0] req_xrc_srqn,   // the message's SRQ
  input  wire logic [31:0]             req_qp_xrcd,
  input  wire logic [31:0]             req_srq_xrcd,   // of req_pkt_srqn's SRQ; 0: none
  // ... and the key stage's: the PD of the access, the key table's size and its entry
  input  wire logic [PDN_BITS-1:0]     req_pdn,
  input  wire logic [31:0]             req_nkeys,
  input  wire logic                    req_ctx_valid,
  input  wire logic [7:0]              req_ctx_variant,
  input  wire logic [1:0]              req_ctx_mw_type,
  input  wire logic                    req_ctx_bound,
  input  wire logic [PDN_BITS-1:0]     req_ctx_pdn,
  input  wire logic [31:0]             req_ctx_access,
  input  wire logic [HCA_QPN_BITS-1:0] req_ctx_qpn,
  input  wire logic [VA_BITS-1:0]      req_ctx_va,
  input  wire logic [VA_BITS-1:0]      req_ctx_len,
  input  wire logic [VA_BITS-1:0]      req_ctx_iova,
  // response (valid/ready): registered, the cycle after the request is taken
  output logic                         resp_valid,
  input  wire logic                    resp_ready,
  output hm_resp_fe_verdict_e          resp_verdict,
  output hm_resp_fe_kind_e             resp_kind,
  output hm_psn_class_e                resp_psn_cls,
  output logic                         resp_send_nak,
  output logic                         resp_nak_sent,
  output hm_mkey_result_e              resp_key,
  output logic [VA_BITS-1:0]           resp_iova,
  // the first cycle the block has work of its own: now while an answer waits, else never
  output logic [63:0]                  quiet_until,
  // statistics since reset: requests checked, refused (a NAK or a drop), sequence NAKs, and
  // the key stage's checks and refusals
  output logic [31:0]                  stat_checks,
  output logic [31:0]                  stat_refused,
  output logic [31:0]                  stat_seq_naks,
  output logic [31:0]                  stat_key_checks,
  output logic [31:0]                  stat_key_denied
);

  // ---- parameter checks at elaboration ----
  if (VA_BITS < 32 || VA_BITS > 64)
    $error("resp_fe: VA_BITS = %0d, must be 32 .. 64", VA_BITS);
  if (PDN_BITS < 1 || PDN_BITS > 32)
    $error("resp_fe: PDN_BITS = %0d, must be 1 .. 32", PDN_BITS);
  if (MAX_HOLD > 1000000)
    $error("resp_fe: MAX_HOLD = %0d, at most 1000000", MAX_HOLD);

  logic                req_fire, resp_fire;
  logic                uc, first, last, send, gap, in_msg, lost, xrc_bad;
  logic [31:0]         left;
  hm_psn_class_e       psn_cls;
  logic                psn_send_nak, psn_nak_sent, psn_ready, psn_valid;
  logic [63:0]         psn_quiet;
  hm_resp_fe_verdict_e verdict, kind_verdict;
  hm_resp_fe_kind_e    kind;
  logic                kind_ok;
  // the key stage's request
  logic                key_go;
  logic [31:0]         key_rkey, key_access;
  logic [VA_BITS-1:0]  key_va, key_len;
  logic                key_ready, key_valid, key_need;
  hm_mkey_result_e     key_result;
  logic [VA_BITS-1:0]  key_iova;
  logic [63:0]         key_quiet;
  // the registered checks
  logic                s1_valid, s1_key;
  hm_resp_fe_verdict_e s1_verdict;
  hm_resp_fe_kind_e    s1_kind;
  hm_psn_class_e       s1_psn_cls;
  logic                s1_send_nak, s1_nak_sent;

  assign req_ready = !s1_valid || resp_ready;
  assign req_fire = req_valid && req_ready;
  assign resp_fire = resp_valid && resp_ready;

  assign uc = req_qp_type == 4'(HCA_QPT_UC);
  assign first = req_pos == 2'(HM_POS_FIRST) || req_pos == 2'(HM_POS_ONLY);
  assign last = req_pos == 2'(HM_POS_LAST) || req_pos == 2'(HM_POS_ONLY);
  assign send = (req_cls & 4'(HM_OPC_SEND)) != '0;

  // ---- the PSN stage: UC never NAKs a gap, so the stage sees one outstanding ----
  psn psn_stage (
    .clk, .rst, .now,
    .req_valid(req_fire), .req_ready(psn_ready), .req_psn, .req_epsn,
    .req_nak_sent(req_nak_sent || uc),
    .resp_valid(psn_valid), .resp_ready(1'b1), .resp_cls(psn_cls), .resp_send_nak(psn_send_nak),
    .resp_nak_sent(psn_nak_sent), .quiet_until(psn_quiet), .stat_naks(stat_seq_naks));

  // UC: a gap loses the message in progress; the rest of a lost message is dropped
  assign gap = psn_cls != HM_PSN_EXPECTED;
  assign in_msg = req_in_msg && !(uc && gap);
  assign lost = uc && (gap ? !first : req_uc_drop) && !first;
  assign xrc_bad = req_qp_type == 4'(HCA_QPT_XRC_RECV) &&
                   (req_srq_xrcd == '0 || req_srq_xrcd != req_qp_xrcd ||
                    (in_msg && req_pkt_srqn != req_xrc_srqn));

  // ---- the opcode valid for the QP type, and the kind's own checks ----
  always_comb begin
    kind_ok = 1'b1;
    kind = HM_RESP_FE_READ;
    if (!uc && (req_cls & 4'(HM_OPC_READ_REQ)) != '0) kind = HM_RESP_FE_READ;
    else if (!uc && (req_cls & 4'(HM_OPC_ATOMIC)) != '0) kind = HM_RESP_FE_ATOMIC;
    else if (send) kind = HM_RESP_FE_SEND;
    else if ((req_cls & 4'(HM_OPC_WRITE)) != '0) kind = HM_RESP_FE_WRITE;
    else kind_ok = 1'b0;
  end

`ifdef HCA_RTL_BUG_RESP_FE
  // test-only bug (HCASIM_RTL_BUG=resp_fe): a WRITE's FIRST/ONLY is measured against the
  // message before it rather than its own RETH
  assign left = req_wr_left;
`else
  assign left = first ? req_reth_len : req_wr_left;
`endif

  always_comb begin
    kind_verdict = HM_RESP_FE_EXECUTE;
    key_need = 1'b0;
    key_rkey = req_reth_rkey;
    key_access = 32'(HCA_ACCESS_REMOTE_READ);
    key_va = req_reth_va;
    key_len = VA_BITS'(req_reth_len);
    unique case (kind)
      HM_RESP_FE_READ: begin
        key_need = req_reth_len != '0;
        if ((req_qp_access & 32'(HCA_ACCESS_REMOTE_READ)) == '0)
          kind_verdict = HM_RESP_FE_NO_ACCESS;
      end
      HM_RESP_FE_ATOMIC: begin
        key_need = 1'b1;
        key_rkey = req_atomic_rkey;
        key_access = 32'(HCA_ACCESS_REMOTE_ATOMIC);
        key_va = req_atomic_va;
        key_len = VA_BITS'(8);
        if (req_atomic_va[2:0] != '0) kind_verdict = HM_RESP_FE_ALIGN;
        else if ((req_qp_access & 32'(HCA_ACCESS_REMOTE_ATOMIC)) == '0)
          kind_verdict = HM_RESP_FE_NO_ACCESS;
      end
      HM_RESP_FE_WRITE: begin
        key_need = req_paylen != '0;
        key_rkey = first ? req_reth_rkey : req_wr_rkey;
        key_access = 32'(HCA_ACCESS_REMOTE_WRITE);
        key_va = first ? req_reth_va : req_wr_va;
        key_len = VA_BITS'(req_paylen);
        if (first && (req_qp_access & 32'(HCA_ACCESS_REMOTE_WRITE)) == '0)
          kind_verdict = HM_RESP_FE_NO_ACCESS;
        else if (req_paylen > left || (last && req_paylen != left))
          kind_verdict = HM_RESP_FE_LENGTH;
      end
      default: ; // SEND: its checks are the receive WQE's, in execution
    endcase
  end

  // ---- the verdict before the key stage, in the responder's order ----
  always_comb begin
    if (lost) verdict = HM_RESP_FE_UC_LOST;
    else if (!uc && psn_cls == HM_PSN_DUPLICATE) verdict = HM_RESP_FE_DUPLICATE;
    else if (!uc && psn_cls == HM_PSN_AHEAD) verdict = HM_RESP_FE_AHEAD;
    else if (in_msg == first || (in_msg && req_msg_write == send)) verdict = HM_RESP_FE_OPCODE_SEQ;
    else if (xrc_bad) verdict = HM_RESP_FE_XRC_SRQ;
    else if (!kind_ok) verdict = HM_RESP_FE_OPCODE;
    else verdict = kind_verdict;
  end
  assign key_go = verdict == HM_RESP_FE_EXECUTE && key_need;

  // ---- the key stage: taken with the request, answered registered with it ----
  mkey #(.VA_BITS(VA_BITS), .PDN_BITS(PDN_BITS), .MAX_HOLD(MAX_HOLD)) key_stage (
    .clk, .rst, .now,
    .req_valid(req_fire && key_go), .req_ready(key_ready),
    .req_remote(1'b1), .req_key(key_rkey), .req_pdn, .req_qpn, .req_va(key_va),
    .req_len(key_len), .req_access(key_access), .req_nkeys,
    .req_ctx_valid, .req_ctx_variant, .req_ctx_mw_type, .req_ctx_bound, .req_ctx_pdn,
    .req_ctx_access, .req_ctx_qpn, .req_ctx_va, .req_ctx_len, .req_ctx_iova,
    .resp_valid(key_valid), .resp_ready, .resp_result(key_result), .resp_iova(key_iova),
    .quiet_until(key_quiet), .stat_checks(stat_key_checks), .stat_denied(stat_key_denied));

  always_ff @(posedge clk) begin
    if (rst) begin
      s1_valid <= 1'b0;
      s1_key <= 1'b0;
      s1_verdict <= HM_RESP_FE_EXECUTE;
      s1_kind <= HM_RESP_FE_READ;
      s1_psn_cls <= HM_PSN_EXPECTED;
      s1_send_nak <= 1'b0;
      s1_nak_sent <= 1'b0;
      stat_checks <= '0;
    end else if (req_fire) begin
      s1_valid <= 1'b1;
      s1_key <= key_go;
      s1_verdict <= verdict;
      // the kind once the opcode is known valid for the QP
      s1_kind <= verdict == HM_RESP_FE_EXECUTE || verdict > HM_RESP_FE_OPCODE ? kind
                 : HM_RESP_FE_READ;
      s1_psn_cls <= psn_cls;
      s1_send_nak <= psn_send_nak;
      s1_nak_sent <= uc ? req_nak_sent : psn_nak_sent;
      stat_checks <= stat_checks + 32'd1;
    end else if (resp_fire) begin
      s1_valid <= 1'b0;
    end
  end

  assign resp_valid = s1_valid;
  assign resp_key = s1_key ? key_result : HM_MKEY_OK;
  assign resp_iova = s1_key ? key_iova : '0;
  assign resp_verdict = s1_key && key_result != HM_MKEY_OK ? HM_RESP_FE_RKEY : s1_verdict;
  assign resp_kind = s1_kind;
  assign resp_psn_cls = s1_psn_cls;
  assign resp_send_nak = s1_send_nak;
  assign resp_nak_sent = s1_nak_sent;
  assign quiet_until = s1_valid ? 64'd0 : key_quiet;

  always_ff @(posedge clk) begin
    if (rst) stat_refused <= '0;
    else if (resp_fire && resp_verdict != HM_RESP_FE_EXECUTE && resp_verdict != HM_RESP_FE_DUPLICATE)
      stat_refused <= stat_refused + 32'd1;
  end

  // ---- assertions (rtl/prim/hs_check.sv, txn_check.sv, and the block's own) ----
  hs_check #(.W(2 + 4 + HCA_PSN_BITS + 32 + 2 * VA_BITS + 3 * 32 + HCA_QPN_BITS)) chk_req_pkt (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_pos, req_cls, req_psn, req_paylen, req_reth_va, req_reth_rkey, req_reth_len,
              req_atomic_va, req_atomic_rkey, req_pkt_srqn}));
  hs_check #(.W(4 + 2 * HCA_QPN_BITS + 32 + HCA_PSN_BITS + 4 + VA_BITS + 2 * 32 + 2 * 32))
    chk_req_qp (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_qp_type, req_qpn, req_xrc_srqn, req_qp_access, req_epsn, req_nak_sent,
              req_in_msg, req_uc_drop, req_msg_write, req_wr_va, req_wr_rkey, req_wr_left,
              req_qp_xrcd, req_srq_xrcd}));
  hs_check #(.W(PDN_BITS + 32 + 1 + 8 + 2 + 1 + PDN_BITS + 32 + HCA_QPN_BITS + 3 * VA_BITS))
    chk_req_key (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_pdn, req_nkeys, req_ctx_valid, req_ctx_variant, req_ctx_mw_type, req_ctx_bound,
              req_ctx_pdn, req_ctx_access, req_ctx_qpn, req_ctx_va, req_ctx_len, req_ctx_iova}));
  hs_check #(.W($bits(hm_resp_fe_verdict_e) + $bits(hm_resp_fe_kind_e) + $bits(hm_psn_class_e) +
                2 + $bits(hm_mkey_result_e) + VA_BITS)) chk_resp (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready),
    .payload({resp_verdict, resp_kind, resp_psn_cls, resp_send_nak, resp_nak_sent, resp_key,
              resp_iova}));
  // an answer may be taken in the cycle the next request is: two in flight at that edge
  txn_check #(.MAX_LATENCY(1 + MAX_HOLD), .DEPTH(2)) chk_txn (
    .clk, .rst, .now, .req_valid, .req_fire, .resp_valid, .resp_fire);

  // The stages keep step with the checks: the PSN stage answers in the cycle it is asked and
  // has no work of its own; the key stage answers exactly the requests sent to it, and is free
  // whenever one is.
  always_ff @(posedge clk) begin
    if (!rst && req_fire)
      assert (psn_ready && psn_valid && psn_quiet == '1)
        else $error("%m: PSN stage not answering in the request's cycle");
    if (!rst && s1_valid)
      assert (key_valid == s1_key)
        else $error("%m: key stage answer %0d for a request that sent it %0d", key_valid, s1_key);
    if (!rst && req_fire && key_go)
      assert (key_ready) else $error("%m: key stage busy when a request needs it");
    // what EXECUTE means, restated from the rules: RC, the expected PSN; a WRITE within its
    // RETH's length; an atomic aligned
    if (!rst && req_fire && verdict == HM_RESP_FE_EXECUTE) begin
      assert (uc || psn_cls == HM_PSN_EXPECTED)
        else $error("%m: RC request executed with PSN class %0d", psn_cls);
      assert (kind != HM_RESP_FE_WRITE || req_paylen <= left)
        else $error("%m: WRITE of %0d bytes passed with %0d left", req_paylen, left);
      assert (kind != HM_RESP_FE_ATOMIC || req_atomic_va[2:0] == '0)
        else $error("%m: atomic at 0x%0h passed unaligned", req_atomic_va);
    end
  end

endmodule

`default_nettype wire
