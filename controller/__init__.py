"""The OpenFlow ECMP controller and its pure-Python groundwork (paths, hashing)."""
