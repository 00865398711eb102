#!/bin/bash
# Reference solution.
set -e
mkdir -p /home/agent/bin
for name in backup cleanup ping; do
  printf '#!/bin/bash\necho %s\n' "$name" > "/home/agent/bin/$name.sh"
  chmod +x "/home/agent/bin/$name.sh"
done
cat > /home/agent/crontab.txt <<'CRON'
# m h dom mon dow command
30 2 * * * /home/agent/bin/backup.sh
0 4 * * 1 /home/agent/bin/cleanup.sh
*/15 * * * * /home/agent/bin/ping.sh
CRON
