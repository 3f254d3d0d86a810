#!/usr/bin/env python3
"""A sentinel whose answer a test rewrites while rlock runs.

    fake_sentinel.py PORT_FILE CONFIG_FILE

Listens on a free loopback port (written to PORT_FILE). Every command reads CONFIG_FILE,
one line "HOST PORT EPOCH": SENTINEL GET-MASTER-ADDR-BY-NAME answers HOST PORT, SENTINEL
MASTER answers that master with config-epoch EPOCH, SUBSCRIBE/PSUBSCRIBE are acknowledged
(no message ever comes), HELLO is an unknown command, anything else +OK. Stops when the
test kills it, or by itself after 120 seconds (a test that failed before killing it).
"""
import asyncio
import os
import sys


def encode(value):
    if isinstance(value, list):
        return b"*%d\r\n" % len(value) + b"".join(encode(v) for v in value)
    if isinstance(value, int):
        return b":%d\r\n" % value
    data = str(value).encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


async def read_command(reader):
    line = await reader.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return line.decode(errors="replace").split()
    args = []
    for _ in range(int(line[1:])):
        size = int((await reader.readline())[1:])
        args.append((await reader.readexactly(size + 2))[:-2].decode(errors="replace"))
    return args


def answer(args, config):
    host, port, epoch = open(config).read().split()
    name = args[0].upper() if args else ""
    sub = args[1].upper() if len(args) > 1 else ""
    if name == "SENTINEL" and sub == "GET-MASTER-ADDR-BY-NAME":
        return encode([host, port])
    if name == "SENTINEL" and sub == "MASTER" and len(args) > 2:
        return encode(["name", args[2], "ip", host, "port", port, "flags", "master",
                       "config-epoch", epoch])
    if name in ("SUBSCRIBE", "PSUBSCRIBE"):
        return b"".join(encode([name.lower(), ch, i + 1]) for i, ch in enumerate(args[1:]))
    if name == "HELLO":
        return b"-ERR unknown command 'HELLO'\r\n"
    return b"+OK\r\n"


async def main(port_file, config):
    async def serve(reader, writer):
        try:
            while (args := await read_command(reader)) is not None:
                writer.write(answer(args, config))
                await writer.drain()
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            pass
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    async with server:
        try:
            await asyncio.wait_for(server.serve_forever(), 120)
        except asyncio.TimeoutError:
            pass


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
