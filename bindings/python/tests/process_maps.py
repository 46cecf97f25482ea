"""Which of this process's mappings holds an address (/proc/self/maps):
how the tests tell a tensor mapped in a file from a copy."""


def mapping_of(address):
    """The pathname of the mapping of this process that holds `address`,
    "" for anonymous memory, None where none does."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            low, high = (int(x, 16) for x in fields[0].split("-"))
            if low <= address < high:
                return fields[5].strip() if len(fields) > 5 else ""
    return None
