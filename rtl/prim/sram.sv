// sram: a simple dual-port SRAM (one read port, one write port, one clock) with a registered
// read, WIDTH bits by DEPTH words (docs/rtl.md "The SRAM primitive").
//
// - Read: with re high at a rising edge, rdata holds mem[raddr] from that edge on (one cycle
//   of latency); with re low, rdata keeps its value.
// - Write: with we high at a rising edge, mem[waddr] becomes wdata.
// - Read during write, same address, same edge: rdata gets the OLD word (read-first); the new
//   word is read from the next edge on. A block that needs the new word forwards it or stalls
//   (sched's hazard tracking).
// - Contents are zero after rst (an FPGA block RAM is initialised at configuration, as
//   Corundum's queue RAMs are by their initial loops; an ASIC macro would need a sweep).
//   rdata is zero after rst too.
// - An address at or beyond DEPTH is an assertion failure under --assert.
//
// The simulation model holds only the words written since reset (an associative array), so a
// RAM sized for every QPN of the configured maximum (2^24 + 2 words) costs memory only for the
// QPs in use; under SYNTHESIS it is a plain array for the tool to map onto block RAM.
`default_nettype none

module sram #(
  parameter int unsigned WIDTH = 8,
  parameter int unsigned DEPTH = 16,
  localparam int unsigned AW = DEPTH > 1 ? $clog2(DEPTH) : 1
) (
  input  wire logic             clk,
  input  wire logic             rst,
  input  wire logic             re,
  input  wire logic [AW-1:0]    raddr,
  output logic      [WIDTH-1:0] rdata,
  input  wire logic             we,
  input  wire logic [AW-1:0]    waddr,
  input  wire logic [WIDTH-1:0] wdata
);
  if (WIDTH < 1) $error("sram: WIDTH = %0d, must be at least 1 (instance %m)", WIDTH);
  if (DEPTH < 2) $error("sram: DEPTH = %0d, must be at least 2 (instance %m)", DEPTH);

`ifdef SYNTHESIS
  (* ramstyle = "no_rw_check" *)
  logic [WIDTH-1:0] mem [DEPTH];

  always_ff @(posedge clk) begin
    if (rst) rdata <= '0;
    else if (re) rdata <= mem[raddr];
    if (we && !rst) mem[waddr] <= wdata;
  end
`else
  logic [WIDTH-1:0] mem [bit [AW-1:0]];

  // The array is this process's alone: it is read before it is written (read-first) with
  // blocking assignments, which the associative array needs (its delete cannot be deferred).
  // verilator lint_off BLKSEQ
  always_ff @(posedge clk) begin
    if (rst) begin
      mem.delete();
      rdata <= '0;
    end else begin
      assert (!re || 32'(raddr) < DEPTH)
        else $error("%m: read of word %0d, beyond DEPTH %0d", raddr, DEPTH);
      assert (!we || 32'(waddr) < DEPTH)
        else $error("%m: write of word %0d, beyond DEPTH %0d", waddr, DEPTH);
      // (a read of a word not held would add it as a zero: exists() keeps the array sparse)
      if (re) rdata <= mem.exists(raddr) != 0 ? mem[raddr] : '0;
      if (we) mem[waddr] = wdata;
    end
  end
  // verilator lint_on BLKSEQ
`endif

endmodule

`default_nettype wire
