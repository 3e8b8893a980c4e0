// txn_check: the checker of a request channel and the response channel that answers it, in
// order, one response per request (docs/rtl.md "Assertions"; immediate assertions and
// counters, see hs_check.sv): no response without an outstanding request (one presented in this
// cycle counts, for a block that answers combinationally), none taken before its request, no
// more than DEPTH requests outstanding, and no more than MAX_LATENCY cycles (of now, the
// block's cycle, so cycles the transactor skipped count) without a response while requests
// are outstanding.
`default_nettype none

module txn_check #(
  parameter int unsigned MAX_LATENCY = 1,
  parameter int unsigned DEPTH = 1      // requests outstanding at most
) (
  input  wire logic        clk,
  input  wire logic        rst,
  input  wire logic [63:0] now,          // the block's cycle (skipped cycles count)
  input  wire logic req_fire,            // req_valid && req_ready
  input  wire logic req_valid,
  input  wire logic resp_valid,
  input  wire logic resp_fire            // resp_valid && resp_ready
);
  if (DEPTH < 1) $error("txn_check: DEPTH = %0d, must be at least 1 (instance %m)", DEPTH);

  logic [31:0] outstanding;
  logic [63:0] since; // the cycle the wait for the next response began

  always_ff @(posedge clk) begin
    if (rst) begin
      outstanding <= '0;
      since <= '0;
    end else begin
      assert (!resp_valid || outstanding != '0 || req_valid)
        else $error("%m: a response without a request");
      assert (!resp_fire || outstanding != '0 || req_fire)
        else $error("%m: a response taken before its request");
      assert (outstanding + 32'(req_fire) <= DEPTH)
        else $error("%m: %0d requests outstanding, at most %0d", outstanding + 32'(req_fire),
                    DEPTH);
      assert (outstanding == '0 || now - since <= 64'(MAX_LATENCY))
        else $error("%m: no response for %0d cycles (at most %0d)", now - since, MAX_LATENCY);
      outstanding <= outstanding + 32'(req_fire) - 32'(resp_fire);
      if (resp_fire || outstanding == '0) since <= now;
    end
  end
endmodule

`default_nettype wire
