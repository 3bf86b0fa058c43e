"""What the tool side keeps of the calls it served.

Counters for stats requests, and the at-most-once record of task ids and their
replies. It imports no other room.
"""
