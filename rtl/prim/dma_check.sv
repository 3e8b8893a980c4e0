// dma_check: the checker of a block's DMA port (docs/rtl.md "The DMA port"): the block, as
// master, sends tagged read and write requests on dma_req (valid/ready) and takes their
// completions on dma_cpl (valid/ready), in any order. Checked, with immediate assertions and
// counters as hs_check and txn_check (which it instantiates on both channels):
//   - both channels hold valid and their payload while stalled (hs_check);
//   - no completion without a request in flight, at most 2^TAG_BITS in flight, and none
//     waited for longer than MAX_LATENCY cycles of now (txn_check, which counts, not orders);
//   - a request's tag is not in flight already, and its length is not zero;
//   - a completion's tag is in flight, for the same kind (read or write) as its request.
`default_nettype none

module dma_check #(
  parameter int unsigned TAG_BITS = 4,
  parameter int unsigned MAX_LATENCY = 1000000  // cycles a transfer may take at most
) (
  input  wire logic                clk,
  input  wire logic                rst,
  input  wire logic [63:0]         now,
  input  wire logic                req_valid,
  input  wire logic                req_ready,
  input  wire logic                req_write,
  input  wire logic [TAG_BITS-1:0] req_tag,
  input  wire logic [63:0]         req_addr,
  input  wire logic [31:0]         req_off,
  input  wire logic [31:0]         req_len,
  input  wire logic                cpl_valid,
  input  wire logic                cpl_ready,
  input  wire logic [TAG_BITS-1:0] cpl_tag,
  input  wire logic                cpl_write,
  input  wire logic                cpl_err,
  input  wire logic [63:0]         cpl_time
);
  if (TAG_BITS < 1 || TAG_BITS > 8)
    $error("dma_check: TAG_BITS = %0d, must be 1 .. 8 (instance %m)", TAG_BITS);

  localparam int unsigned TAGS = 1 << TAG_BITS;

  logic req_fire, cpl_fire;
  logic [TAGS-1:0] inflight, is_write;

  assign req_fire = req_valid && req_ready;
  assign cpl_fire = cpl_valid && cpl_ready;

  hs_check #(.W(1 + TAG_BITS + 64 + 32 + 32)) u_req_hs (
    .clk, .rst, .valid(req_valid), .ready(req_ready),
    .payload({req_write, req_tag, req_addr, req_off, req_len})
  );
  hs_check #(.W(TAG_BITS + 2 + 64)) u_cpl_hs (
    .clk, .rst, .valid(cpl_valid), .ready(cpl_ready),
    .payload({cpl_tag, cpl_write, cpl_err, cpl_time})
  );
  txn_check #(.MAX_LATENCY(MAX_LATENCY), .DEPTH(TAGS)) u_txn (
    .clk, .rst, .now, .req_fire, .req_valid, .resp_valid(cpl_valid), .resp_fire(cpl_fire)
  );

  always_ff @(posedge clk) begin
    if (rst) begin
      inflight <= '0;
      is_write <= '0;
    end else begin
      if (req_fire) begin
        assert (!inflight[req_tag])
          else $error("%m: tag %0d requested while in flight", req_tag);
        assert (req_len != '0)
          else $error("%m: a transfer of 0 bytes (tag %0d)", req_tag);
      end
      if (cpl_fire) begin
        assert (inflight[cpl_tag])
          else $error("%m: completion of tag %0d, which is not in flight", cpl_tag);
        assert (!inflight[cpl_tag] || is_write[cpl_tag] == cpl_write)
          else $error("%m: completion of tag %0d as a %s", cpl_tag, cpl_write ? "write" : "read");
      end
      // a tag completed and requested again by the same edge is in flight after it
      for (int unsigned t = 0; t < TAGS; t++) begin
        if (req_fire && TAG_BITS'(t) == req_tag) begin
          inflight[t] <= 1'b1;
          is_write[t] <= req_write;
        end else if (cpl_fire && TAG_BITS'(t) == cpl_tag) begin
          inflight[t] <= 1'b0;
        end
      end
    end
  end
endmodule

`default_nettype wire
