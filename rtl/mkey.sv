// mkey: the memory-key check (model/twin.h "mkey"; IBA 10.6, 10.6.7). An access of len bytes
// at va through a key, by a QP of a PD, needing some rights: an lkey names a memory region
// only; an rkey a region or a bound memory window (a type 2 window: bound to the accessing
// QP). In order: the key (its index within the table, the entry valid, the variant byte, a
// window only through an rkey and only while bound), the PD, a type 2 window's QP, the rights,
// the range (no wrap past 2^VA_BITS); an access that passes gets its device address.
//
// The key table is the device's; until this block has a DMA port the caller reads the entry
// the key's index names and presents it with the request (req_ctx_*, all zero for an index
// beyond the table) with the table's size (req_nkeys). The answer is registered: valid the
// cycle after the request is taken, held until taken; a new request is taken in the cycle the
// previous answer is (req_ready = the output register is free or being emptied).
`default_nettype none

module mkey
  import hca_pkg::*;
#(
  parameter int unsigned VA_BITS = 64,  // virtual and device addresses, lengths
  parameter int unsigned PDN_BITS = 32, // protection domain numbers
  // the most cycles a consumer holds an answer (resp_ready low) before taking it: bounds the
  // latency txn_check allows; the transactor takes every answer at once
  parameter int unsigned MAX_HOLD = 0
) (
  input  wire logic                    clk,
  input  wire logic                    rst,
  // the current cycle (the transactor's count; cycles it skips count too): for the checks
  input  wire logic [63:0]             now,
  // request (valid/ready): the access
  input  wire logic                    req_valid,
  output logic                         req_ready,
  input  wire logic                    req_remote,     // an rkey (else an lkey)
  input  wire logic [31:0]             req_key,
  input  wire logic [PDN_BITS-1:0]     req_pdn,        // the PD of the access
  input  wire logic [HCA_QPN_BITS-1:0] req_qpn,        // the accessing QP
  input  wire logic [VA_BITS-1:0]      req_va,
  input  wire logic [VA_BITS-1:0]      req_len,
  input  wire logic [31:0]             req_access,     // HCA_ACCESS_* needed
  input  wire logic [31:0]             req_nkeys,      // entries in the key table
  // ... and the key table's entry at req_key[31:8]
  input  wire logic                    req_ctx_valid,
  input  wire logic [7:0]              req_ctx_variant,
  input  wire logic [1:0]              req_ctx_mw_type, // 0: a region; 1, 2: a window
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
  output hm_mkey_result_e              resp_result,
  output logic [VA_BITS-1:0]           resp_iova,      // HM_MKEY_OK: the device address; else 0
  // the first cycle the block has work of its own: now while an answer waits, else never
  output logic [63:0]                  quiet_until,
  // statistics since reset: checks answered, and those refused
  output logic [31:0]                  stat_checks,
  output logic [31:0]                  stat_denied
);

  // ---- parameter checks at elaboration ----
  if (VA_BITS < 32 || VA_BITS > 64)
    $error("mkey: VA_BITS = %0d, must be 32 .. 64", VA_BITS);
  if (PDN_BITS < 1 || PDN_BITS > 32)
    $error("mkey: PDN_BITS = %0d, must be 1 .. 32", PDN_BITS);
  if (MAX_HOLD > 1000000)
    $error("mkey: MAX_HOLD = %0d, at most 1000000", MAX_HOLD);

  logic                 req_fire, resp_fire;
  logic                 key_bad, pd_bad, qp_bad, access_bad, range_bad;
  logic [VA_BITS-1:0]   end_va, ctx_end;
  hm_mkey_result_e      result;

  // the key: an index within the table and a valid entry of the same variant; a window
  // only through an rkey, and only while bound (an invalidated window's key is no key)
  assign key_bad = {8'd0, req_key[31:8]} >= req_nkeys || !req_ctx_valid ||
                   req_ctx_variant != req_key[7:0] ||
                   (req_ctx_mw_type != 2'd0 && (!req_remote || !req_ctx_bound));
  assign pd_bad = req_ctx_pdn != req_pdn;
  assign qp_bad = req_remote && req_ctx_mw_type == 2'(HCA_MW_TYPE_2) && req_ctx_qpn != req_qpn;
  assign access_bad = (req_ctx_access & req_access) != req_access;
  // [va, va + len) within [ctx_va, ctx_va + ctx_len), the sums modulo 2^VA_BITS as the
  // model's; an access that wraps past the top is refused
  assign end_va = req_va + req_len;
  assign ctx_end = req_ctx_va + req_ctx_len;
`ifdef HCA_RTL_BUG_MKEY
  // test-only bug (HCASIM_RTL_BUG=mkey): an access ending at the region's last byte is refused
  assign range_bad = req_va < req_ctx_va || end_va < req_va || end_va >= ctx_end;
`else
  assign range_bad = req_va < req_ctx_va || end_va < req_va || end_va > ctx_end;
`endif

  always_comb begin
    if (key_bad) result = HM_MKEY_BAD_KEY;
    else if (pd_bad) result = HM_MKEY_BAD_PD;
    else if (qp_bad) result = HM_MKEY_BAD_QP;
    else if (access_bad) result = HM_MKEY_BAD_ACCESS;
    else if (range_bad) result = HM_MKEY_BAD_RANGE;
    else result = HM_MKEY_OK;
  end

  assign req_ready = !resp_valid || resp_ready;
  assign req_fire = req_valid && req_ready;
  assign resp_fire = resp_valid && resp_ready;
  assign quiet_until = resp_valid ? 64'd0 : '1;

  always_ff @(posedge clk) begin
    if (rst) begin
      resp_valid <= 1'b0;
      resp_result <= HM_MKEY_OK;
      resp_iova <= '0;
      stat_checks <= '0;
      stat_denied <= '0;
    end else if (req_fire) begin
      resp_valid <= 1'b1;
      resp_result <= result;
      resp_iova <= result == HM_MKEY_OK ? req_ctx_iova + (req_va - req_ctx_va) : '0;
      stat_checks <= stat_checks + 32'd1;
      stat_denied <= stat_denied + 32'(result != HM_MKEY_OK);
    end else if (resp_fire) begin
      resp_valid <= 1'b0;
    end
  end

  // ---- assertions (rtl/prim/hs_check.sv, txn_check.sv, and the block's own) ----
  hs_check #(.W(1 + 32 + PDN_BITS + HCA_QPN_BITS + 2 * VA_BITS + 32 + 32)) chk_req (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_remote, req_key, req_pdn, req_qpn, req_va, req_len, req_access, req_nkeys}));
  hs_check #(.W(1 + 8 + 2 + 1 + PDN_BITS + 32 + HCA_QPN_BITS + 3 * VA_BITS)) chk_ctx (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_ctx_valid, req_ctx_variant, req_ctx_mw_type, req_ctx_bound, req_ctx_pdn,
              req_ctx_access, req_ctx_qpn, req_ctx_va, req_ctx_len, req_ctx_iova}));
  hs_check #(.W($bits(hm_mkey_result_e) + VA_BITS)) chk_resp (
    .clk, .rst, .valid(resp_valid), .ready(resp_ready), .payload({resp_result, resp_iova}));
  // an answer may be taken in the cycle the next request is: two in flight at that edge
  txn_check #(.MAX_LATENCY(1 + MAX_HOLD), .DEPTH(2)) chk_txn (
    .clk, .rst, .now, .req_valid, .req_fire, .resp_valid, .resp_fire);

  // What an OK grants, restated from the rules rather than from the decision above: a valid
  // entry of the key's variant and index, in the access's PD, with every right asked for, a
  // region through an lkey, and a range that neither wraps nor leaves the entry's.
  always_ff @(posedge clk) begin
    if (!rst && req_fire && result == HM_MKEY_OK) begin
      assert (req_ctx_valid && req_ctx_variant == req_key[7:0] &&
              32'(req_key[31:8]) < req_nkeys && req_ctx_pdn == req_pdn)
        else $error("%m: key 0x%0h granted without its entry (valid %0d, variant 0x%0h, PD %0d/%0d)",
                    req_key, req_ctx_valid, req_ctx_variant, req_ctx_pdn, req_pdn);
      assert ((req_access & ~req_ctx_access) == '0)
        else $error("%m: key 0x%0h granted rights 0x%0h it lacks", req_key,
                    req_access & ~req_ctx_access);
      assert (req_remote || req_ctx_mw_type == 2'd0)
        else $error("%m: lkey 0x%0h granted a memory window", req_key);
      assert (req_va >= req_ctx_va && end_va >= req_va && end_va <= ctx_end)
        else $error("%m: key 0x%0h granted [0x%0h, +0x%0h) outside its range", req_key,
                    req_va, req_len);
    end
    if (!rst && resp_valid)
      assert (resp_result <= HM_MKEY_BAD_QP && (resp_result == HM_MKEY_OK || resp_iova == '0))
        else $error("%m: answer %0d with device address 0x%0h", resp_result, resp_iova);
  end

endmodule

`default_nettype wire
