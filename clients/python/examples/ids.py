"""Prints N IDs, one a line, from the servers in $SNOWFLAKED_SERVERS (and
$SNOWFLAKED_CACERT for https): straight from the service (remote), through
a local buffer (buffered), or made here over a leased worker ID (leased)."""

import argparse
import sys

from snowflaked_client import Client, IdBuffer, LeasedGenerator, SnowflakedError


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=("remote", "buffered", "leased"), default="remote")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--tag", default="example")
    args = parser.parse_args()
    try:
        with Client() as client:
            if args.mode == "remote":
                ids = (client.id(args.tag) for _ in range(args.count))
                for snowflake in ids:
                    print(snowflake)
            elif args.mode == "buffered":
                with IdBuffer(client, args.tag) as buffer:
                    for _ in range(args.count):
                        print(buffer.next())
            else:
                with LeasedGenerator(client, "ids-example") as generator:
                    for _ in range(args.count):
                        print(generator.next_id())
    except SnowflakedError as e:
        print(f"ids: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
