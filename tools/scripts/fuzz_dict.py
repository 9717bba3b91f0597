#!/usr/bin/env python3
"""Writes tests/fuzz/trainsim.dict, the fuzzers' dictionary: every key segment of the config key
tables in configs/README.md, units, names and extreme numbers, and the tokens of the logs and
result files. Run after changing config keys: python3 tools/scripts/fuzz_dict.py"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'KiB', 'MiB', 'GiB', 'TiB', 'B/s', 'MB/s', 'GB/s', 'TB/s',
         'GiB/s', 'Mb/s', 'Gb/s', 'Tb/s', 'Gbps', 'ps', 'ns', 'us', 'ms', 's', 'min', 'h', 'd',
         'FLOP', 'GFLOP', 'TFLOP', 'PFLOP', 'FLOP/s', 'GFLOP/s', 'TFLOP/s', 'PFLOP/s', 'epoch', '%']
NAMES = ['true', 'false', 'auto', 'hbm', 'uvm', 'uvm_caching', 'table_wise', 'row_wise',
         'column_wise', 'table_row_wise', 'data_parallel', 'greedy', 'hugectr', 'torchrec', 'best',
         'plan', 'zipf', 'uniform', 'histogram', 'hot_set', 'derived', 'nvswitch', 'pcie',
         'fat_tree', 'single_switch', 'infiniband', 'roce', 'efa', 'tcpx', 'socket', 'bf16', 'fp16',
         'fp32', 'fp8', 'ring', 'tree', 'nvls', 'collnet', 'direct', '2d', 'sgd', 'adagrad', 'adam',
         'dot', 'dcnv2', 'concat', 'recsys', 'dense', 'other', 'nan', 'inf', '-1', '0', '1e300',
         '1e-300', '4294967304', '9223372036854775807']
TOKENS = ['{', '}', '[', ']', ': ', '- ', '\\x0A', '#', '"', '=', '@2x8',
          '# Collective test starting: ', 'all_reduce_perf', 'alltoall_perf', '# Rank ', ' device ',
          '#wrong', 'out-of-place', 'in-place', 'size', 'count', 'type', 'redop', 'root', 'time',
          'algbw', 'busbw', 'nGpus', '"bench":', '"gpu":', '"time_s":', '"bytes":', '"dim":',
          '"dtype":', '"index":', '"axes":', '# trainsim sweep ', '"trainsim_sweep":',
          '"signature":', '"points":']


def main():
    text = open(os.path.join(ROOT, 'configs', 'README.md')).read()
    keys = set(re.findall(r'^\| `([a-z0-9_.\[\]]+)` \|', text, re.M))
    segments = sorted({p + ':' for k in keys for p in re.split(r'[.\[\]]+', k) if p})
    with open(os.path.join(ROOT, 'tests', 'fuzz', 'trainsim.dict'), 'w') as f:
        f.write('# libFuzzer dictionary of the readers (written by tools/scripts/fuzz_dict.py).\n')
        for t in segments:
            f.write('"%s"\n' % t)
        for u in UNITS:
            f.write('" %s"\n' % u)
        for n in NAMES:
            f.write('"%s"\n' % n)
        for t in TOKENS:
            f.write('"%s"\n' % t.replace('"', '\\"'))
    print('%d key segments, %d entries' % (len(segments),
                                          len(segments) + len(UNITS) + len(NAMES) + len(TOKENS)))


if __name__ == '__main__':
    main()
