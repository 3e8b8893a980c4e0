// hs_check: the checker of one valid/ready channel (docs/rtl.md "Assertions"): immediate
// assertions in a clocked process, which Verilator 5.006 compiles under --assert (its
// concurrent SVA is a subset: the property is written out as registers instead). Every block
// instantiates it on its request and its response channel. A failed assertion stops the
// simulation with the instance (%m), the check and the values.
`default_nettype none

// While valid is high and ready low (a stall), valid stays high and the payload stays the same
// until the transfer.
module hs_check #(
  parameter int unsigned W = 1
) (
  input  wire logic         clk,
  input  wire logic         rst,
  input  wire logic         valid,
  input  wire logic         ready,
  input  wire logic [W-1:0] payload
);
  if (W < 1) $error("hs_check: W = %0d, must be at least 1 (instance %m)", W);

  logic         stalled;
  logic [W-1:0] held;

  always_ff @(posedge clk) begin
    if (rst) begin
      stalled <= 1'b0;
      held <= '0;
    end else begin
      if (stalled) begin
        assert (valid)
          else $error("%m: valid dropped while stalled (ready low)");
        assert (payload == held)
          else $error("%m: payload changed while stalled: 0x%0h, was 0x%0h", payload, held);
      end
      stalled <= valid && !ready;
      held <= payload;
    end
  end
endmodule

`default_nettype wire
