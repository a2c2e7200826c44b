"""python -m dms_emitter: stream the source table to the bronze bucket in DMS format."""

from dms_emitter.emitter import main

if __name__ == "__main__":
    main()
