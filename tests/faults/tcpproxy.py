"""A small loopback TCP proxy for fault tests: goarchive connects to it instead of the server, and the test cuts
connections at will.

    proxy = TcpProxy(real_port)            # listens on 127.0.0.1:proxy.port
    proxy.cut()                            # resets every current connection (RST to both sides)
    proxy.cut(lambda tid: tid not in locks)  # only the connections whose server thread id matches
    proxy.refuse(2.0)                      # new connections are reset at once for 2 seconds
    proxy.close()

Each connection's server thread id (= CONNECTION_ID() on the server) is read from the server's handshake packet
(protocol 10: 1 byte version, NUL-terminated server version, 4-byte little-endian thread id), so a test can tell
goarchive's lock sessions (IS_USED_LOCK) from its data connections.
"""

import socket
import struct
import threading
import time


def _reset(sock):
    """Closes SOCK with an RST (SO_LINGER 0), so the peer sees a reset, not an orderly end."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class _Conn:
    def __init__(self, client, upstream):
        self.client = client
        self.upstream = upstream
        self.thread_id = None
        self.closed = False
        self.lock = threading.Lock()

    def close(self, reset=True):
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for s in (self.client, self.upstream):
            if reset:
                _reset(s)
            else:
                # shutdown first: a close() alone, while the other pump thread is blocked in recv() on this socket,
                # leaves the socket open in the kernel, so the peer never sees the end (a SIGKILLed client's server
                # session, and its named locks, then lived on)
                for step in (lambda: s.shutdown(socket.SHUT_RDWR), s.close):
                    try:
                        step()
                    except OSError:
                        pass


class TcpProxy:
    def __init__(self, target_port, target_host="127.0.0.1"):
        self.target = (target_host, target_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self.port = self._listener.getsockname()[1]
        self._conns = []
        self._mutex = threading.Lock()
        self._refuse_until = 0.0
        self._stopped = False
        self.accepted = 0
        self.refused = 0
        self.cut_count = 0
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    # -- control ---------------------------------------------------------------------------------------------------
    def connections(self):
        """[(server thread id or None, _Conn)] of the open connections."""
        with self._mutex:
            return [(c.thread_id, c) for c in self._conns if not c.closed]

    def cut(self, which=None):
        """Resets every open connection (or those whose server thread id satisfies WHICH); returns how many."""
        n = 0
        for tid, conn in self.connections():
            if which is None or which(tid):
                conn.close(reset=True)
                n += 1
        self.cut_count += n
        return n

    def refuse(self, seconds):
        """New connections are reset at once for SECONDS from now."""
        self._refuse_until = time.monotonic() + seconds

    def close(self):
        self._stopped = True
        try:
            self._listener.close()
        except OSError:
            pass
        self.cut()

    # -- plumbing --------------------------------------------------------------------------------------------------
    def _accept_loop(self):
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if time.monotonic() < self._refuse_until:
                self.refused += 1
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _reset(client)
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(client, upstream)
            with self._mutex:
                self._conns = [c for c in self._conns if not c.closed]
                self._conns.append(conn)
                self.accepted += 1
            threading.Thread(target=self._pump, args=(conn, upstream, client, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(conn, client, upstream, False), daemon=True).start()

    def _pump(self, conn, src, dst, from_server):
        head = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if from_server and conn.thread_id is None and len(head) < 512:
                    head += data
                    conn.thread_id = _handshake_thread_id(head)
                dst.sendall(data)
        except OSError:
            pass
        # One side ended or the connection was cut: end the other side too (an orderly close unless cut).
        conn.close(reset=False)


def _handshake_thread_id(head):
    """The thread id in a (possibly partial) initial handshake packet; None until enough bytes arrived."""
    if len(head) < 5 or head[4] != 10:
        return None
    end = head.find(b"\0", 5)
    if end < 0 or len(head) < end + 5:
        return None
    return struct.unpack("<I", head[end + 1:end + 5])[0]
