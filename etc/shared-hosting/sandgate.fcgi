#!/bin/sh
# sandgate on shared hosting: Apache's mod_fcgid runs this file for every
# copy of the gateway it starts (one per request it serves at once), with
# its FastCGI socket on fd 0 and next to no environment (PATH, and only
# what the host's FcgidInitialEnv adds: secrets go in files, see
# sandgate.conf). /home/USER/sandgate is where sandgate was installed
# (make install PREFIX=/home/USER/sandgate) and holds its config.
# chmod 755; under suEXEC it must be owned by you and writable by you only.
exec /home/USER/sandgate/bin/sandgate-fcgi --config /home/USER/sandgate/sandgate.conf
