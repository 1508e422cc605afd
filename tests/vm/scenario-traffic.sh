#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Traffic through a tunnel shaped by wgshape runs at the set rate, within
# 10%, both ways: egress (upload from cli) and ingress (download to cli).
# iperf3 measures TCP payload, so the expectation is the set rate less what
# cake accounts per packet: RATE * (1420 - 52) / (1420 + 60); at ingress,
# less the packets cake dropped (it counts them against the rate). A result
# too low is measured again, up to 3 times (a busy host starves TCG).
. "$(dirname "$0")/lib.sh"

need_wgshape
need_tools iperf3 ss
lab_topology ipv4
iperf_server srv "$SRV_TUN4"

step "what this machine sustains unshaped"
pick_test_rate
rate=$TEST_RATE
goodput=$(expected_goodput "$rate" 1420 60)
info "expected TCP goodput at $rate: $(mbit "$goodput")"

step "egress: wgshape set wg0 egress $rate on cli, upload"
expect_wgshape_ok cli set wg0 egress "$rate"
expect_cake cli wg0 bandwidth="$(rate_bytes "$rate")" overhead=60
expect_rate "upload through cake egress $rate" 10 rate_upload "$goodput"

step "ingress: wgshape set wg0 ingress $rate on cli, download"
expect_wgshape_ok cli set wg0 egress off ingress "$rate"
expect_eq "cli wg0 root qdisc after egress off" noqueue "$(root_field cli wg0 .kind)"
expect_cake cli ifb4wg0 bandwidth="$(rate_bytes "$rate")" overhead=60 ingress=true
expect_rate "download through cake ingress $rate" 10 rate_download_ingress "$goodput"

step "egress on the server side, download"
expect_wgshape_ok srv set wg0 egress "$rate"
expect_wgshape_ok cli set wg0 ingress off
expect_rate "download through srv cake egress $rate" 10 rate_download "$goodput"

finish
