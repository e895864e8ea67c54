#!/bin/sh
# Writes Alertmanager's runtime config: prometheus/alertmanager.yml with its placeholder webhook URLs
# replaced by the real ones, read from files so they never sit in the repository, the environment or
# a process list.
#
#   VIGIA_ALERTMANAGER_PAGER_URL_FILE=/run/secrets/pager_url \
#   VIGIA_ALERTMANAGER_TICKET_URL_FILE=/run/secrets/ticket_url \
#   VIGIA_ALERTMANAGER_HEARTBEAT_URL_FILE=/run/secrets/heartbeat_url \
#     render-alertmanager-config.sh alertmanager.yml /tmp/alertmanager.yml
#
# A variable left unset keeps its placeholder (a warning on stderr): fine for a laptop, where
# failed deliveries show up as AlertmanagerNotificationsFailing. POSIX sh + awk only, so it runs in the
# busybox-based Alertmanager image as well as on a host. Exit 2 with one line on bad input.
set -eu

if [ "$#" -ne 2 ]; then
    echo "usage: $0 TEMPLATE OUTPUT" >&2
    exit 2
fi
template=$1
output=$2
[ -r "$template" ] || { echo "$0: cannot read $template" >&2; exit 2; }

# url_from VAR_NAME: print the URL in the file named by $VAR_NAME, or nothing when it is unset.
url_from() {
    file=$(eval "printf '%s' \"\${$1:-}\"")
    if [ -z "$file" ]; then
        echo "$0: $1 is not set; its receiver keeps the placeholder URL and cannot deliver" >&2
        return 0
    fi
    [ -r "$file" ] || { echo "$0: $1: cannot read $file" >&2; exit 2; }
    url=$(tr -d ' \t\r\n' < "$file")
    case $url in
        http://?*|https://?*) ;;
        *) echo "$0: $1: $file does not hold an http(s) URL" >&2; exit 2 ;;
    esac
    # The URL is written inside a double-quoted YAML string.
    case $url in
        *\"*|*\\*) echo "$0: $1: the URL in $file contains a quote or backslash" >&2; exit 2 ;;
    esac
    printf '%s' "$url"
}

pager=$(url_from VIGIA_ALERTMANAGER_PAGER_URL_FILE)
ticket=$(url_from VIGIA_ALERTMANAGER_TICKET_URL_FILE)
heartbeat=$(url_from VIGIA_ALERTMANAGER_HEARTBEAT_URL_FILE)

# Literal (not regex) replacement: URLs are full of characters regexes and sed treat specially.
PAGER=$pager TICKET=$ticket HEARTBEAT=$heartbeat awk '
    function swap(line, from, to,    i, done) {
        if (to == "") return line
        done = ""
        while ((i = index(line, from)) > 0) {
            done = done substr(line, 1, i - 1) to
            line = substr(line, i + length(from))
        }
        return done line
    }
    {
        line = swap($0, "http://pager.vigia.invalid/", ENVIRON["PAGER"])
        line = swap(line, "http://ticket.vigia.invalid/", ENVIRON["TICKET"])
        print swap(line, "http://heartbeat.vigia.invalid/", ENVIRON["HEARTBEAT"])
    }
' "$template" > "$output"
