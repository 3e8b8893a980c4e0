/* Fuzz target `mmio`: a rogue driver's raw MMIO to hcasim2's BAR 0 — registers, command
 * engine, UAR doorbells and BlueFlame — through the public host bus (hcasim_bus.h). Each
 * 12-byte record of the input is one access: offset (4 bytes), width and direction (1 byte:
 * bits 0-3 the width, bit 4 a read, bit 5 a block write of the next bytes), value (7 bytes).
 * hcasim2's own driver may well be broken by what it is sent (BAR 0 is the whole device, as on
 * silicon); the bystander on hcasim0 and hcasim1 must not be. */
#include "testbench/fuzz/fuzz.h"

#include "sim/hcasim.h"
#include "sim/hcasim_bus.h"

#include <string.h>

static struct hcasim_fn *victim;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct hcasim_fn *fns[8];
	int n;

	(void)argc, (void)argv;
	fz_setup();
	fz_heal_victims = false;
	n = hcasim_bus_enumerate(fns, 8);
	for (int i = 0; i < n; i++)
		if (hcasim_fn_devno(fns[i]) == 2)
			victim = fns[i];
	if (!victim)
		fz_fail("no hcasim2 on the bus");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i + 12 <= size; i += 12) {
		uint32_t off;
		uint64_t val = 0;
		unsigned op = data[i + 4];

		memcpy(&off, data + i, 4);
		memcpy(&val, data + i + 5, 7);
		if (op & 0x20) {
			size_t len = size - i - 12 < 256 ? size - i - 12 : 256;

			hcasim_mmio_write_block(victim, 0, off, data + i + 12, len);
			i += len;
		} else if (op & 0x10) {
			hcasim_mmio_read(victim, 0, off, op & 0xf, &val);
		} else {
			hcasim_mmio_write(victim, 0, off, op & 0xf, val);
		}
	}
	fz_after_input();
	return 0;
}
