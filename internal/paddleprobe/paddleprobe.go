// Package paddleprobe holds the Python that tells which PaddlePaddle an
// interpreter imports and whether that build can run parameter-server
// training. The local node reads it when it installs a runtime
// (localcluster/paddleruntime); `paddlejob launch` reads it in a pod before
// it starts a pserver.
package paddleprobe

// NativeImport binds `native` to Paddle's native library: paddle.base's
// libpaddle from 2.6 on, paddle.fluid's core before.
const NativeImport = `import paddle
try:
    from paddle.base import libpaddle as native
except ImportError:
    from paddle.fluid import core as native
`

// HasParameterServer is a Python expression, true when the native library
// has the parameter-server runtime's classes: PyPI's CPU wheels from 3.1 on
// are built without them, and a parameter-server program then fails deep in
// fleet ("cannot import name 'CommContext'").
const HasParameterServer = `hasattr(native, "DistFleetWrapper") and hasattr(native, "CommContext")`

// ParameterServerScript prints Paddle's version and exits 0 when the build
// has the parameter-server runtime, 3 when it has not.
const ParameterServerScript = NativeImport + `import sys
print(paddle.__version__)
sys.exit(0 if ` + HasParameterServer + ` else 3)
`
