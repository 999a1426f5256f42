//! manycore sockets over shared memory with buddy-managed buffers (rckSock).
