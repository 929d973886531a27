"""Run the C kernels one call at a time, from Python, with numpy arrays: the tests' and benchmarks' harness.

* :mod:`.host`: the kernel library built with the host ``cc`` into a shared library, called through
  ctypes (:class:`.host.KernelLib`);
* :mod:`.device`: the same calls on an emulated Arm core under QEMU, with instruction counts
  (:class:`.device.DeviceKernelLib`, targets :data:`.device.TARGETS`).

Both take their kernels, prototypes and argument types from the manifest (:mod:`tabula.kernels`): any
kernel can be called by name with numpy arrays (``lib.call("tabula_clamp_s8", x, x.size, -3, 9, out)``);
the op methods (``lib.conv2d(x, w, b, pad=..., ...)``) only shape the arguments of one op.
"""
