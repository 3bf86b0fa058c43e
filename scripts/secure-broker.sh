#!/bin/sh
# Passwords for the secured broker (docker-compose.secure.yml), one per user that
# mosquitto.acl names.
#
#   scripts/secure-broker.sh new-env [ACL_FILE] > .env.secure
#       Print NAME_PASSWORD=<random> for every `user NAME` in ACL_FILE (default
#       mosquitto.acl): AGENT_PASSWORD, HEALTH_PASSWORD, CALCULATOR_PASSWORD, ...
#       The name is upper-cased, with `.` and `-` as `_`. Passwords are 32 hex
#       digits, so they go into a broker URL as they are.
#
#   scripts/secure-broker.sh start ACL_FILE PASSWORD_FILE [COMMAND ARGS...]
#       Write mosquitto's PASSWORD_FILE from those variables, then run COMMAND
#       (the broker) in place of this script. The file is written afresh at each
#       start, so changing a password is: edit the environment, restart. It is
#       readable by its owner only; run as root (as in the eclipse-mosquitto
#       image), the file is given to the `mosquitto` user, which mosquitto becomes
#       before it reads the file. A user without its variable stops the start
#       with a message naming the variable.
#
# POSIX sh and busybox only: the eclipse-mosquitto image runs it.
set -eu

usage() {
    echo "usage: $0 new-env [ACL_FILE] | start ACL_FILE PASSWORD_FILE [COMMAND ARGS...]" >&2
    exit 2
}

# The user names of ACL_FILE, one per line.
acl_users() {
    [ -r "$1" ] || { echo "$0: cannot read $1" >&2; exit 1; }
    users=$(sed -n 's/^user[[:space:]][[:space:]]*\([^[:space:]]*\).*$/\1/p' "$1")
    [ -n "$users" ] || { echo "$0: no 'user NAME' line in $1" >&2; exit 1; }
    printf '%s\n' "$users"
}

# The environment variable holding USER's password.
password_variable() {
    variable="$(printf '%s' "$1" | tr 'abcdefghijklmnopqrstuvwxyz.-' 'ABCDEFGHIJKLMNOPQRSTUVWXYZ__')_PASSWORD"
    case $variable in
        [!A-Z_]* | *[!A-Z0-9_]*)
            echo "$0: user name '$1' cannot be spelled as a variable name" >&2
            exit 1
            ;;
    esac
    printf '%s' "$variable"
}

[ $# -ge 1 ] || usage
mode=$1
shift
case $mode in
    new-env)
        [ $# -le 1 ] || usage
        acl=${1:-mosquitto.acl}
        # Plain assignments, so that set -e stops at a bad ACL before printing anything.
        users=$(acl_users "$acl")
        for user in $users; do
            variable=$(password_variable "$user")
            password=$(od -An -vtx1 -N16 /dev/urandom | tr -d ' \n')
            echo "$variable=$password"
        done
        ;;
    start)
        [ $# -ge 2 ] || usage
        acl=$1
        password_file=$2
        shift 2
        users=$(acl_users "$acl")
        missing=""
        for user in $users; do
            variable=$(password_variable "$user")
            eval "password=\${$variable-}"
            [ -n "$password" ] || missing="$missing $variable"
        done
        if [ -n "$missing" ]; then
            echo "$0: not set:$missing (make them with: scripts/secure-broker.sh new-env > .env.secure)" >&2
            exit 1
        fi
        umask 077
        draft="$password_file.new"
        rm -f "$draft"
        : >"$draft"
        for user in $users; do
            variable=$(password_variable "$user")
            eval "password=\${$variable}"
            mosquitto_passwd -b "$draft" "$user" "$password"
        done
        chmod 600 "$draft"
        if [ "$(id -u)" = 0 ] && id mosquitto >/dev/null 2>&1; then
            chown mosquitto:mosquitto "$draft"
        fi
        mv -f "$draft" "$password_file"
        echo "$0: $password_file holds $(echo "$users" | wc -l | tr -d ' ') users" >&2
        [ $# -eq 0 ] || exec "$@"
        ;;
    *)
        usage
        ;;
esac
